"""Groups of users: made by admins (``source = "local"``) or synced from a sign-in provider at each
sign-in (``source`` = the provider's slug, read-only in the admin API). Agents, models, tools and
knowledge collections may be limited to groups."""
