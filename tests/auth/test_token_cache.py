"""API tokens cost what a session cookie costs: the token's account is kept in the read cache (on SQLite)
and its ``last_used_at`` is written at most once a minute, not on every request. A revoked token, a
disabled account or a changed role still reaches the very next request."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI

from agentloft.auth import service
from agentloft.core.crypto import token_hash
from agentloft.core.readcache import ReadCache
from tests.chat.helpers import wait_for
from tests.support import ApiClient, LiveApp


def _cache(app: LiveApp) -> ReadCache:
    server_app: FastAPI = app.server.server.config.app
    cache: ReadCache = server_app.state.db.cache
    return cache


def _bearer(app: LiveApp, token: str) -> ApiClient:
    return ApiClient(app.url, csrf=False, headers={"Authorization": f"Bearer {token}"})


def _last_used(app: LiveApp, token_id: int) -> Any:
    return app.sql("SELECT last_used_at FROM api_tokens WHERE id = ?", (token_id,))[0][0]


def test_token_use_is_recorded_once_a_minute(app: LiveApp, admin: ApiClient) -> None:
    created = admin.ok("POST", "/api/auth/tokens", json={"name": "cli"})
    assert _last_used(app, created["id"]) is None
    with _bearer(app, created["token"]) as bearer:
        bearer.ok("GET", "/api/auth/me")
        first = _last_used(app, created["id"])
        assert first is not None
        for _ in range(5):
            bearer.ok("GET", "/api/auth/me")
        assert _last_used(app, created["id"]) == first  # no write per request
        if _cache(app).enabled:
            assert _cache(app).get("tokens", token_hash(created["token"])) is not None
    listed = admin.ok("GET", "/api/auth/tokens")["items"]
    assert listed[0]["lastUsedAt"] is not None


def test_token_use_is_recorded_again_after_the_interval(
    app: LiveApp, admin: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(service, "TOKEN_USE_INTERVAL", timedelta(milliseconds=200))
    created = admin.ok("POST", "/api/auth/tokens", json={"name": "cli"})
    with _bearer(app, created["token"]) as bearer:
        bearer.ok("GET", "/api/auth/me")
        first = _last_used(app, created["id"])

        def moved() -> bool:
            bearer.ok("GET", "/api/auth/me")
            return _last_used(app, created["id"]) != first

        wait_for(moved, timeout=10)


def test_cached_token_is_refused_once_revoked_or_its_account_changes(
    app: LiveApp, admin: ApiClient, make_user: Any
) -> None:
    bob = make_user("bob")
    bob_id = bob.ok("GET", "/api/auth/me")["id"]
    created = bob.ok("POST", "/api/auth/tokens", json={"name": "t"})
    spare = bob.ok("POST", "/api/auth/tokens", json={"name": "spare"})
    with _bearer(app, created["token"]) as bearer, _bearer(app, spare["token"]) as other:
        for _ in range(2):  # the second request is served from the cache
            assert bearer.ok("GET", "/api/auth/me")["role"] == "user"
            assert bearer.get("/api/admin/users").status_code == 403
        admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"role": "admin"})
        assert bearer.get("/api/admin/users").status_code == 200
        admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"role": "user"})
        assert bearer.get("/api/admin/users").status_code == 403

        other.ok("GET", "/api/auth/me")
        bob.ok("DELETE", f"/api/auth/tokens/{created['id']}", status=204)
        r = bearer.get("/api/auth/me")
        assert r.status_code == 401 and r.json()["error"]["code"] == "not_authenticated"
        assert other.ok("GET", "/api/auth/me")["username"] == "bob"  # another token of the account still works

        admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"disabled": True})
        assert other.get("/api/auth/me").status_code == 401
