"""A session cookie stops working the moment it expires or is signed out, although the account behind it
is kept in the read cache (``core.readcache``, on SQLite) between requests."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import httpx
from fastapi import FastAPI

from agentloft.core.crypto import token_hash
from agentloft.core.readcache import ReadCache
from tests.support import ApiClient, LiveApp, login


def _cache(app: LiveApp) -> ReadCache:
    """The running server's read cache (the server runs in this process)."""
    server_app: FastAPI = app.server.server.config.app
    cache: ReadCache = server_app.state.db.cache
    return cache


def _cached(app: LiveApp, cookie: str) -> bool:
    return _cache(app).get("auth", token_hash(cookie)) is not None


def _expire_at(app: LiveApp, cookie: str, when: datetime) -> None:
    """Move the session's expiry straight in the database: no write through the app's engine, so the
    cache is not told (as with a session that simply runs out)."""
    app.sql("UPDATE auth_sessions SET expires_at = ? WHERE token_hash = ?", (app.stamp(when), token_hash(cookie)))


def _me(app: LiveApp, cookie: str) -> httpx.Response:
    with httpx.Client(base_url=app.url, timeout=30) as raw:
        return raw.get("/api/auth/me", headers={"Cookie": f"agentloft_session={cookie}"})


def test_cached_session_stops_at_its_expiry(app: LiveApp, admin: ApiClient) -> None:
    with app.client() as c:
        login(c, "admin")
        cookie = c.cookies["agentloft_session"]
        expiry = datetime.now(UTC) + timedelta(seconds=1.5)
        _expire_at(app, cookie, expiry)
        assert _me(app, cookie).status_code == 200  # read from the database, kept in the cache
        assert _me(app, cookie).status_code == 200
        if _cache(app).enabled:
            assert _cached(app, cookie)
        while datetime.now(UTC) <= expiry:  # wait for the clock to pass the expiry
            time.sleep(0.05)
        if _cache(app).enabled:
            assert _cached(app, cookie)  # nothing was written: the entry is still there...
        r = _me(app, cookie)
        assert r.status_code == 401 and r.json()["error"]["code"] == "not_authenticated"  # ...and refused
        assert c.get("/api/auth/me").status_code == 401


def test_signed_out_session_stops_at_once(app: LiveApp, admin: ApiClient) -> None:
    """A copy of the cookie (another tab, a stolen cookie) dies with the sign-out."""
    cookie = admin.cookies["agentloft_session"]
    assert _me(app, cookie).status_code == 200
    assert _me(app, cookie).status_code == 200
    if _cache(app).enabled:
        assert _cached(app, cookie)
    admin.ok("POST", "/api/auth/logout", status=204)
    assert _me(app, cookie).status_code == 401
    assert admin.get("/api/auth/me").status_code == 401


def test_signing_out_one_session_keeps_the_others(app: LiveApp, admin: ApiClient) -> None:
    with app.client() as other:
        login(other, "admin")
        assert other.ok("GET", "/api/auth/me")["username"] == "admin"
        admin.ok("POST", "/api/auth/logout", status=204)
        assert other.ok("GET", "/api/auth/me")["username"] == "admin"
