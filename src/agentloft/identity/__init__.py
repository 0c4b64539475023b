"""Sign-in through identity providers: OpenID Connect and LDAP, several at once (``identity.service``)."""
