"""Accounts, roles, browser sessions, personal API tokens, CSRF and login throttling."""
