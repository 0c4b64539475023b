"""LDAP / Active Directory sign-in with ``ldap3``, on the usual username and password form.

For each enabled LDAP provider, in order, after local accounts: bind as the service account (``bindDn``,
or anonymously when empty), find the person with ``userFilter`` under ``userSearchBase`` (exactly one
entry, else not found), bind as that entry with the password typed, then read their groups with
``groupFilter`` under ``groupSearchBase`` (``{dn}`` and ``{username}`` are filled in, escaped). The
entry's DN is the subject accounts are linked by.

``ldaps://`` URLs connect over TLS, ``startTls`` upgrades a plain connection before anything is sent;
certificates are checked against the URL's host name with the system's CAs. The host passes the network
guard (``tools.netguard.check_host``) and the connection goes to the very address checked. An empty
password is refused before any bind (LDAP takes an empty password as an anonymous bind that succeeds).
A directory that cannot be reached or refuses the service account is logged and skipped, so it never
blocks the other ways in; the person then gets the form's usual "wrong username or password".
ldap3 is blocking: each attempt runs on a thread.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any
from urllib.parse import urlsplit

from ldap3 import NONE, SUBTREE, Connection, Server, Tls
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.core.crypto import SecretBox
from agentloft.identity import service
from agentloft.identity.models import AuthProvider
from agentloft.identity.service import ExternalPerson
from agentloft.tools import netguard

log = logging.getLogger(__name__)

TIMEOUT_S = 10
MAX_GROUPS = 500


class DirectoryUnavailable(Exception):
    """The directory could not be asked (unreachable, blocked, or the service account was refused)."""


def _first(entry: dict[str, Any], name: str) -> str | None:
    value = entry.get(name)
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value) if value not in (None, "") else None


class _Directory:
    """One provider's directory at one checked address (blocking calls: run them on a thread)."""

    def __init__(self, provider: AuthProvider, secret: str | None, address: str) -> None:
        self.cfg = provider.config
        url = urlsplit(self.cfg["url"])
        host = url.hostname or ""
        use_ssl = url.scheme == "ldaps"
        tls = (Tls(validate=ssl.CERT_REQUIRED, valid_names=[host], sni=host)
               if use_ssl or self.cfg.get("startTls") else None)
        self.server = Server(address, port=url.port or (636 if use_ssl else 389), use_ssl=use_ssl, tls=tls,
                             get_info=NONE, connect_timeout=TIMEOUT_S)
        self.secret = secret

    def _bound(self, user: str | None, password: str | None) -> Connection | None:
        conn = Connection(self.server, user=user, password=password, read_only=True,
                          receive_timeout=TIMEOUT_S, raise_exceptions=False)
        conn.open()
        if self.cfg.get("startTls") and not conn.start_tls():
            conn.unbind()
            raise DirectoryUnavailable(f"StartTLS refused: {conn.result.get('description')}")
        if not conn.bind():
            conn.unbind()
            return None
        return conn

    def _service(self) -> Connection:
        bind_dn = self.cfg.get("bindDn") or None
        conn = self._bound(bind_dn, self.secret if bind_dn else None)
        if conn is None:
            raise DirectoryUnavailable("the service account's bind was refused")
        return conn

    def _find(self, conn: Connection, username: str) -> tuple[str, dict[str, Any]] | None:
        wanted = [self.cfg.get("usernameAttribute", "uid"), self.cfg.get("emailAttribute", "mail")]
        query = self.cfg["userFilter"].replace("{username}", escape_filter_chars(username))
        conn.search(self.cfg["userSearchBase"], query, SUBTREE, attributes=wanted, size_limit=2)
        entries = [e for e in conn.response or [] if e.get("type") == "searchResEntry"]
        if len(entries) != 1:
            return None
        return str(entries[0]["dn"]), dict(entries[0].get("attributes") or {})

    def _groups(self, conn: Connection, dn: str, username: str) -> list[str]:
        base = self.cfg.get("groupSearchBase")
        if not base:
            return []
        name_attr = self.cfg.get("groupNameAttribute", "cn")
        query = (self.cfg["groupFilter"].replace("{dn}", escape_filter_chars(dn))
                 .replace("{username}", escape_filter_chars(username)))
        conn.search(base, query, SUBTREE, attributes=[name_attr], size_limit=MAX_GROUPS)
        names = [_first(dict(e.get("attributes") or {}), name_attr)
                 for e in conn.response or [] if e.get("type") == "searchResEntry"]
        return sorted({n for n in names if n})

    def sign_in(self, username: str, password: str) -> ExternalPerson | None:
        service = self._service()
        try:
            found = self._find(service, username)
            if found is None:
                return None
            dn, attrs = found
            person = self._bound(dn, password)
            if person is None:
                return None
            person.unbind()
            groups = self._groups(service, dn, username)
        finally:
            service.unbind()
        return ExternalPerson(
            subject=dn, username=_first(attrs, self.cfg.get("usernameAttribute", "uid")) or username,
            email=_first(attrs, self.cfg.get("emailAttribute", "mail")), groups=groups,
        )


async def sign_in(*, provider: AuthProvider, secret: str | None, allow: netguard.AllowList, username: str,
                  password: str) -> ExternalPerson | None:
    """The person ``username`` is in this directory when ``password`` is theirs; None otherwise, and
    None (logged) when the directory cannot be asked."""
    if not password:
        return None
    url = urlsplit(provider.config["url"])
    try:
        address = await netguard.check_host(url.hostname or "", url.port or 389, allow)
        directory = _Directory(provider, secret, str(address))
        return await asyncio.to_thread(directory.sign_in, username, password)
    except (netguard.NetError, DirectoryUnavailable, LDAPException, OSError) as exc:
        log.warning("sign-in provider %s (LDAP) cannot be asked: %s", provider.slug, exc)
        return None


async def sign_in_any(*, db: AsyncSession, box: SecretBox, allow: netguard.AllowList, username: str,
                      password: str) -> User | None:
    """The account of the first enabled LDAP provider that knows ``username`` with ``password`` (linked,
    made and synced by ``service.sign_in_external``, which may refuse it); None when none does."""
    for provider in await service.list_providers(db=db, enabled_only=True, kind="ldap"):
        person = await sign_in(provider=provider, secret=service.secret_of(row=provider, box=box), allow=allow,
                               username=username, password=password)
        if person is not None:
            return await service.sign_in_external(db=db, provider=provider, person=person)
    return None
