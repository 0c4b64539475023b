"""Who is calling: ``OptionalUser``, ``CurrentUser`` (401 if nobody), ``AdminUser`` (403 if not admin) and
``SessionUser`` (403 unless signed in with a session cookie).

A bearer token wins over a cookie. The lookup runs once per request and is cached on ``request.state``;
a session cookie's or an API token's account is also kept between requests in the read cache
(``agentloft.core.readcache``) until any account, sign-in or token changes, so a revoked token or a
disabled account is refused by the next request. A token's ``last_used_at`` is written at most once a
minute (``auth.service.TOKEN_USE_INTERVAL``), not on every request: a write transaction per API call
cost more than the lookup itself.

Some acts need a session cookie, not an API token (``require_session``): creating a token and changing a
password. A token is a secret that leaks more easily than a password (scripts, config files, another
machine's environment); were it enough for those, whoever found one could mint tokens of their own that
outlive its revocation, or lock the owner out of their account.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from agentloft.audit import capture
from agentloft.audit import service as audit_service
from agentloft.auth import service
from agentloft.auth.models import User
from agentloft.core.crypto import token_hash
from agentloft.core.db import Database, utcnow
from agentloft.core.dependencies import DbSession
from agentloft.core.errors import Forbidden, Unauthorized

SESSION_COOKIE = "agentloft_session"
CSRF_COOKIE = "agentloft_csrf"
CSRF_HEADER = "x-csrf-token"


def bearer_token(connection: HTTPConnection) -> str | None:
    """The bearer token of the ``Authorization`` header, if any. The CSRF middleware asks this same
    function, so a request it lets through without a CSRF token is one that authenticates by token."""
    header = connection.headers.get("authorization", "")
    scheme, _, value = header.partition(" ")
    return value.strip() if scheme.lower() == "bearer" and value.strip() else None


async def _optional_user(request: Request) -> User | None:
    """Find the caller from a bearer token or the session cookie; cache it on the request."""
    if hasattr(request.state, "user"):
        return request.state.user
    database: Database = request.app.state.db
    user: User | None = None
    token = bearer_token(request)
    if token:
        user = await token_user(database, token)
        request.state.auth_method = "bearer"
    elif cookie := request.cookies.get(SESSION_COOKIE):
        user = await _session_user(database, cookie)
        request.state.auth_method = "cookie"
    request.state.user = user
    return user


async def _session_user(database: Database, cookie: str) -> User | None:
    """A session cookie's account, kept in the read cache (``agentloft.core.readcache``) until the session
    expires or any account or sign-in changes: a role change, a disabled account or a sign-out is seen
    by the next request."""

    async def read() -> tuple[User, datetime] | None:
        async with database.read_session() as db:
            return await service.session_user(db=db, token=cookie)

    found = await database.cache.load("auth", token_hash(cookie), read)
    if found is None:
        return None
    user, expires_at = found
    return user if expires_at > utcnow() else None


async def token_user(database: Database, token: str) -> User | None:
    """The enabled account an API token belongs to (None for an unknown or revoked token), through the
    read cache; records the use when the stored one is a minute old. The one way to resolve a token
    (the A2A server's callers use it too)."""
    key = token_hash(token)

    async def read() -> service.TokenOwner | None:
        async with database.read_session() as db:
            return await service.api_token_owner(db=db, token_hash=key)

    owner = await database.cache.load("tokens", key, read)
    if owner is None:
        return None
    await _record_use(database, owner)
    return owner.user


async def api_token_user(connection: HTTPConnection) -> User:
    """The user of the request's personal API token, and nothing else: the routes that OpenAI and MCP
    clients call (``/v1``, ``/mcp``) take no session cookie, which would put their writes within a
    cross-site form's reach. 401 with ``WWW-Authenticate: Bearer`` (the scheme to answer with) when the
    token is missing or unknown. Takes a connection rather than a request so that an ASGI endpoint can
    ask it too."""
    challenge = {"WWW-Authenticate": "Bearer"}
    token = bearer_token(connection)
    if not token:
        raise Unauthorized("Send a personal API token: Authorization: Bearer <token>", code="missing_api_key",
                           headers=challenge)
    user = await token_user(connection.app.state.db, token)
    if user is None:
        raise Unauthorized("Invalid API token", code="invalid_api_key", headers=challenge)
    connection.state.user, connection.state.auth_method = user, "bearer"  # as ``_optional_user`` keeps them
    return user


# Per database: token id → when this process last wrote its use (the cached owner keeps the time it was
# read with, so without this every request until the next read would write again).
_RECORDED: weakref.WeakKeyDictionary[Database, dict[int, datetime]] = weakref.WeakKeyDictionary()


async def _record_use(database: Database, owner: service.TokenOwner) -> None:
    now = utcnow()
    recorded = _RECORDED.setdefault(database, {})
    last = max((t for t in (owner.last_used_at, recorded.get(owner.token_id)) if t is not None), default=None)
    if last is not None and now - last < service.TOKEN_USE_INTERVAL:
        return
    if len(recorded) >= _MAX_RECORDED:
        recorded.clear()  # only spares writes: the database keeps them to one a minute anyway
    recorded[owner.token_id] = now
    async with database.session() as db:
        await service.record_token_use(db=db, token_id=owner.token_id, now=now)


_MAX_RECORDED = 10_000


async def _current_user(user: Annotated[User | None, Depends(_optional_user)]) -> User:
    if user is None:
        raise Unauthorized("sign in first")
    return user


SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


def client_ip(connection: HTTPConnection) -> str | None:
    """The caller's address as the server sees it (behind a proxy: what ``--forwarded-allow-ips`` lets
    uvicorn take from ``X-Forwarded-For``)."""
    return connection.client.host if connection.client else None


def actor_of(connection: HTTPConnection, user: User | None) -> audit_service.Actor:
    """Who the audit trail says did what this request does."""
    return audit_service.Actor(id=user.id if user else None, name=user.username if user else None,
                               ip=client_ip(connection))


async def _admin_user(request: Request, user: Annotated[User, Depends(_current_user)],
                      db: DbSession) -> AsyncIterator[User]:
    """An admin, and for a request that may change something, an ``admin.change`` event of what the
    request's transaction changed (``audit.capture``), written in that transaction before it commits:
    every admin-only endpoint is on the trail through this one dependency, and a change whose event
    cannot be written is rolled back with it."""
    if not user.is_admin:
        raise Forbidden("administrators only", code="admin_required")
    if request.method in SAFE_METHODS:
        yield user
        return
    capture.watch(db)
    yield user
    await audit_service.record_changes(db=db, actor=actor_of(request, user),
                                       target=f"{request.method} {request.url.path}",
                                       detail={"method": request.method, "path": request.url.path})


def require_session(request: Request) -> None:
    """403 ``session_required`` unless the request was authenticated by a session cookie (a bearer token
    wins over a cookie, so a request that sends both counts as the token's)."""
    if getattr(request.state, "auth_method", None) != "cookie":
        raise Forbidden("API tokens cannot do this; sign in with your password and do it from the browser",
                        code="session_required")


async def _cookie_user(request: Request, user: Annotated[User, Depends(_current_user)]) -> User:
    require_session(request)
    return user


async def request_user(request: Request) -> User | None:
    """The caller of a request no route dependency ran for (e.g. the page for an unknown address)."""
    return await _optional_user(request)


OptionalUser = Annotated[User | None, Depends(_optional_user)]
CurrentUser = Annotated[User, Depends(_current_user)]
# scope "function": its closing part (the ``admin.change`` event) runs when the endpoint returns, inside the
# request's transaction (``core.dependencies.DbSession``, the same session), before that commits.
AdminUser = Annotated[User, Depends(_admin_user, scope="function")]
SessionUser = Annotated[User, Depends(_cookie_user)]
TokenUser = Annotated[User, Depends(api_token_user)]
"""The user of a personal API token only (``api_token_user``)."""
