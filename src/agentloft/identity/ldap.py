"""LDAP / Active Directory sign-in with ``ldap3``, on the usual username and password form.

For each enabled LDAP provider, in order, after local accounts: bind as the service account (``bindDn``,
or anonymously when empty), find the person with ``userFilter`` under ``userSearchBase`` (exactly one
entry, else not found), bind as that entry with the password typed, then read their groups with
``groupFilter`` under ``groupSearchBase`` (``{dn}`` and ``{username}`` are filled in, escaped). The
entry's DN is the subject accounts are linked by.

``ldaps://`` URLs connect over TLS, ``startTls`` upgrades a plain connection before anything is sent
(both at once is refused when the provider is written). Certificates are checked against the URL's host
name, with the provider's ``tlsCaCert`` (PEM) as the only trusted CAs when it is set, else the system's.
The host passes the network guard (``core.netguard.check_host``) and the connection goes to the very
address checked. An empty password is refused before any bind (LDAP takes an empty password as an
anonymous bind that succeeds).

A directory that cannot be asked (unreachable, blocked by the guard, a certificate it does not trust,
the service account refused) is logged and the next one is tried, so it never blocks the other ways in.
When no directory signs the person in, at least one could not be asked, and none that could found the
person, the sign-in ends with ``DirectoryUnavailable`` (503 ``directory_unavailable``) rather than "wrong
username or password": nobody checked the password, and the person would otherwise look for a typo that
is not there. The sign-in form gives such an attempt back to the throttle (``auth.router``).
ldap3 is blocking: each attempt runs on a thread.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from typing import Any, Literal
from urllib.parse import urlsplit

from ldap3 import NONE, SUBTREE, Connection, Server, Tls
from ldap3.core.exceptions import LDAPException
from ldap3.utils.conv import escape_filter_chars
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.core import netguard
from agentloft.core.crypto import SecretBox
from agentloft.core.errors import AppError
from agentloft.identity import service
from agentloft.identity.models import AuthProvider
from agentloft.identity.service import ExternalPerson

log = logging.getLogger(__name__)

TIMEOUT_S = 10
MAX_GROUPS = 500


class _CannotAsk(Exception):
    """The directory could not be asked (unreachable, blocked, or the service account was refused)."""


class DirectoryUnavailable(AppError):
    """No directory that could be asked knows the person, and at least one could not be asked."""

    status = 503
    code = "directory_unavailable"


# What one directory said of a username and password: who they are, or that it does not know the name
# ("unknown"), or that the password is not theirs ("refused"), or nothing ("unavailable").
Answer = ExternalPerson | Literal["unknown", "refused", "unavailable"]


def _first(entry: dict[str, Any], name: str) -> str | None:
    value = entry.get(name)
    if isinstance(value, list):
        value = value[0] if value else None
    return str(value) if value not in (None, "") else None


def _default_port(scheme: str) -> int:
    return 636 if scheme == "ldaps" else 389


class _Directory:
    """One provider's directory at one checked address (blocking calls: run them on a thread)."""

    def __init__(self, provider: AuthProvider, secret: str | None, address: str) -> None:
        self.cfg = provider.config
        url = urlsplit(self.cfg["url"])
        host = url.hostname or ""
        use_ssl = url.scheme == "ldaps"
        tls = (Tls(validate=ssl.CERT_REQUIRED, valid_names=[host], sni=host,
                   ca_certs_data=self.cfg.get("tlsCaCert") or None)
               if use_ssl or self.cfg.get("startTls") else None)
        self.server = Server(address, port=url.port or _default_port(url.scheme), use_ssl=use_ssl, tls=tls,
                             get_info=NONE, connect_timeout=TIMEOUT_S)
        self.secret = secret

    def _bound(self, user: str | None, password: str | None) -> Connection | None:
        conn = Connection(self.server, user=user, password=password, read_only=True,
                          receive_timeout=TIMEOUT_S, raise_exceptions=False)
        conn.open()
        if self.cfg.get("startTls") and not conn.start_tls():
            conn.unbind()
            raise _CannotAsk(f"StartTLS refused: {conn.result.get('description')}")
        if not conn.bind():
            conn.unbind()
            return None
        return conn

    def _service(self) -> Connection:
        bind_dn = self.cfg.get("bindDn") or None
        conn = self._bound(bind_dn, self.secret if bind_dn else None)
        if conn is None:
            raise _CannotAsk("the service account's bind was refused")
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

    def sign_in(self, username: str, password: str) -> Answer:
        service = self._service()
        try:
            found = self._find(service, username)
            if found is None:
                return "unknown"
            dn, attrs = found
            person = self._bound(dn, password)
            if person is None:
                return "refused"
            person.unbind()
            groups = self._groups(service, dn, username)
        finally:
            service.unbind()
        return ExternalPerson(
            subject=dn, username=_first(attrs, self.cfg.get("usernameAttribute", "uid")) or username,
            email=_first(attrs, self.cfg.get("emailAttribute", "mail")), groups=groups,
        )


async def sign_in(*, provider: AuthProvider, secret: str | None, allow: netguard.AllowList, username: str,
                  password: str) -> Answer:
    """What this directory says of ``username`` and ``password`` ("unavailable", logged, when it cannot
    be asked)."""
    if not password:
        return "refused"
    url = urlsplit(provider.config["url"])
    try:
        address = await netguard.check_host(url.hostname or "", url.port or _default_port(url.scheme), allow)
        directory = _Directory(provider, secret, str(address))
        return await asyncio.to_thread(directory.sign_in, username, password)
    except (netguard.NetError, _CannotAsk, LDAPException, OSError) as exc:
        log.warning("sign-in provider %s (LDAP) cannot be asked: %s", provider.slug, exc)
        return "unavailable"


async def sign_in_any(*, db: AsyncSession, box: SecretBox, allow: netguard.AllowList, username: str,
                      password: str) -> User | None:
    """The account of the first enabled LDAP provider that knows ``username`` with ``password`` (linked,
    made and synced by ``service.sign_in_external``, which may refuse it); None when none does.
    ``DirectoryUnavailable`` when the password went unchecked (see the module's doc)."""
    answers: set[str] = set()
    for provider in await service.list_providers(db=db, enabled_only=True, kind="ldap"):
        answer = await sign_in(provider=provider, secret=service.secret_of(row=provider, box=box), allow=allow,
                               username=username, password=password)
        if isinstance(answer, ExternalPerson):
            return await service.sign_in_external(db=db, provider=provider, person=answer)
        answers.add(answer)
    if "unavailable" in answers and "refused" not in answers:
        raise DirectoryUnavailable("the sign-in directory could not be reached or its certificate is not "
                                   "trusted, so the password could not be checked; try again later or tell "
                                   "an administrator")
    return None
