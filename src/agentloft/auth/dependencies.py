"""Who is calling: ``OptionalUser``, ``CurrentUser`` (401 if nobody) and ``AdminUser`` (403 if not admin).

A bearer token wins over a cookie. The lookup runs once per request and is cached on ``request.state``;
a session cookie's account is also kept between requests in the read cache (``agentloft.core.readcache``)
until any account or sign-in changes. Bearer tokens are read every time (each use records its time).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from starlette.requests import HTTPConnection

from agentloft.auth import service
from agentloft.auth.models import User
from agentloft.core.crypto import token_hash
from agentloft.core.db import Database, utcnow
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
        async with database.read_session() as db:  # one indexed lookup; records the token's last use
            user = await service.user_for_api_token(db=db, token=token)
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


async def _current_user(user: Annotated[User | None, Depends(_optional_user)]) -> User:
    if user is None:
        raise Unauthorized("sign in first")
    return user


async def _admin_user(user: Annotated[User, Depends(_current_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("administrators only", code="admin_required")
    return user


OptionalUser = Annotated[User | None, Depends(_optional_user)]
CurrentUser = Annotated[User, Depends(_current_user)]
AdminUser = Annotated[User, Depends(_admin_user)]
