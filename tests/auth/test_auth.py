"""Accounts, sessions, CSRF, tokens and user administration over real HTTP (the sign-in throttle has its
own files, ``test_login_throttle.py`` and ``test_throttle.py``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import httpx

from tests.support import ApiClient, LiveApp, login, signup


def test_first_account_is_admin_and_signup_then_closes(app: LiveApp, anon: ApiClient) -> None:
    me = signup(anon, "root")
    assert me["role"] == "admin" and me["username"] == "root"
    assert anon.ok("GET", "/api/auth/me") == me
    with app.client() as other:
        r = other.post("/api/auth/signup", json={"username": "bob", "password": "password123"})
        assert r.status_code == 403
        assert r.json()["error"]["code"] == "signup_closed"


def test_admin_opens_signup(app: LiveApp, admin: ApiClient) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"signupOpen": True})
    with app.client() as other:
        assert signup(other, "bob")["role"] == "user"


def test_me_requires_sign_in(anon: ApiClient) -> None:
    r = anon.get("/api/auth/me")
    assert r.status_code == 401
    assert r.json() == {"error": {"code": "not_authenticated", "message": "sign in first",
                                  "requestId": r.headers["x-request-id"]}}


def test_signup_validation_is_422_with_fields(anon: ApiClient) -> None:
    r = anon.post("/api/auth/signup", json={"username": "a", "password": "short"})
    assert r.status_code == 422
    fields = r.json()["error"]["fields"]
    assert set(fields) == {"username", "password"}
    r = anon.post("/api/auth/signup", json={"username": "bad name!", "password": "password123"})
    assert r.status_code == 422 and "username" in r.json()["error"]["fields"]


def test_session_cookie_is_httponly_lax(app: LiveApp) -> None:
    with app.client() as c:
        r = c.post("/api/auth/signup", json={"username": "root", "password": "password123"})
        cookie = next(h for h in r.headers.get_list("set-cookie") if h.startswith("agentloft_session="))
        assert "HttpOnly" in cookie and "SameSite=lax" in cookie.replace("Lax", "lax")
        csrf = c.cookies.get("agentloft_csrf")
        assert csrf  # readable cookie handed out on the first response


def test_logout_ends_session(admin: ApiClient) -> None:
    admin.ok("POST", "/api/auth/logout", status=204)
    assert admin.get("/api/auth/me").status_code == 401


def test_login_wrong_password(anon: ApiClient, admin: ApiClient) -> None:
    r = anon.post("/api/auth/login", json={"username": "admin", "password": "wrong-password"})
    assert r.status_code == 401
    assert r.json()["error"] == {"code": "invalid_credentials", "message": "wrong username or password",
                                 "requestId": r.headers["x-request-id"]}


def test_unknown_user_login_is_401(anon: ApiClient) -> None:
    r = anon.post("/api/auth/login", json={"username": "ghost", "password": "whatever1"})
    assert r.status_code == 401


def test_csrf_required_for_cookie_writes(app: LiveApp, admin: ApiClient) -> None:
    # Same cookies, but no X-CSRF-Token header: refused before the handler runs.
    with ApiClient(app.url, csrf=False, cookies=admin.cookies) as raw:
        r = raw.post("/api/auth/tokens", json={"name": "x"})
        assert r.status_code == 403
        assert r.json()["error"]["code"] == "csrf_failed"
        r = raw.post("/api/auth/tokens", json={"name": "x"}, headers={"X-CSRF-Token": "forged"})
        assert r.status_code == 403
        good = raw.post(
            "/api/auth/tokens", json={"name": "x"}, headers={"X-CSRF-Token": admin.cookies["agentloft_csrf"]}
        )
        assert good.status_code == 201
    assert admin.ok("GET", "/api/auth/tokens")["items"][0]["name"] == "x"


def test_api_tokens_authenticate_without_csrf(app: LiveApp, admin: ApiClient) -> None:
    created = admin.ok("POST", "/api/auth/tokens", json={"name": "cli"})
    assert created["token"].startswith("alt_") and created["name"] == "cli"
    listed = admin.ok("GET", "/api/auth/tokens")["items"]
    assert listed[0]["id"] == created["id"] and "token" not in listed[0]
    # the secret is stored hashed
    stored = app.sql("SELECT token_hash FROM api_tokens")
    assert stored and stored[0][0] != created["token"]
    with ApiClient(app.url, csrf=False, headers={"Authorization": f"Bearer {created['token']}"}) as bearer:
        assert bearer.ok("GET", "/api/auth/me")["username"] == "admin"
        # a write with a bearer token needs no CSRF token
        assert bearer.ok("POST", "/api/agent-documents", json={"title": "t", "content": "c"}, status=201)
    admin.ok("DELETE", f"/api/auth/tokens/{created['id']}", status=204)
    with ApiClient(app.url, headers={"Authorization": f"Bearer {created['token']}"}) as bearer:
        assert bearer.get("/api/auth/me").status_code == 401
    assert admin.delete(f"/api/auth/tokens/{created['id']}").status_code == 404


def test_an_api_token_cannot_create_tokens_or_change_passwords(app: LiveApp, admin: ApiClient, make_user) -> None:
    """Tokens leak more easily than passwords: were one enough to make tokens, revoking it would leave the
    ones it made working; were it enough to change the password, it could lock the owner out. Both need
    the session cookie, even when a request sends the cookie beside the token."""
    bob = make_user("bob")
    bob_id = bob.ok("GET", "/api/auth/me")["id"]
    token = bob.ok("POST", "/api/auth/tokens", json={"name": "script"})["token"]
    admin_token = admin.ok("POST", "/api/auth/tokens", json={"name": "ops"})["token"]
    change = {"currentPassword": "password123", "newPassword": "a-new-secret"}
    with ApiClient(app.url, csrf=False, headers={"Authorization": f"Bearer {token}"}) as bearer:
        for method, url, body in [("POST", "/api/auth/tokens", {"name": "spawned"}),
                                  ("POST", "/api/auth/password", change)]:
            r = bearer.request(method, url, json=body)
            assert r.status_code == 403, (url, r.text)
            assert r.json()["error"]["code"] == "session_required"
        assert bearer.ok("GET", "/api/auth/me")["username"] == "bob"  # the token itself still works
    with ApiClient(app.url, headers={"Authorization": f"Bearer {token}"}, cookies=bob.cookies) as both:
        r = both.post("/api/auth/tokens", json={"name": "spawned"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "session_required"
    with ApiClient(app.url, csrf=False, headers={"Authorization": f"Bearer {admin_token}"}) as admin_bearer:
        r = admin_bearer.patch(f"/api/admin/users/{bob_id}", json={"password": "set-by-a-token"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "session_required"
        assert admin_bearer.ok("PATCH", f"/api/admin/users/{bob_id}", json={"role": "admin"})["role"] == "admin"
    assert [t["name"] for t in bob.ok("GET", "/api/auth/tokens")["items"]] == ["script"]
    assert bob.get("/api/auth/me").status_code == 200  # no password changed: the browser is still in
    with app.client() as c:
        assert login(c, "bob")["username"] == "bob"


def test_tokens_are_per_user(make_user, admin: ApiClient) -> None:
    token = admin.ok("POST", "/api/auth/tokens", json={"name": "mine"})
    bob = make_user("bob")
    assert bob.ok("GET", "/api/auth/tokens")["items"] == []
    assert bob.delete(f"/api/auth/tokens/{token['id']}").status_code == 404


def test_admin_user_management(app: LiveApp, admin: ApiClient, make_user) -> None:
    created = admin.ok("POST", "/api/admin/users", json={"username": "carol", "password": "password123"})
    assert created["role"] == "user" and created["disabled"] is False
    dup = admin.post("/api/admin/users", json={"username": "CAROL", "password": "password123"})
    assert dup.status_code == 409 and dup.json()["error"]["code"] == "username_taken"
    page = admin.ok("GET", "/api/admin/users", params={"page": 1, "pageSize": 1})
    assert page["total"] == 2 and page["pageSize"] == 1 and page["hasMore"] is True and len(page["items"]) == 1
    promoted = admin.ok("PATCH", f"/api/admin/users/{created['id']}", json={"role": "admin"})
    assert promoted["role"] == "admin"
    assert admin.patch("/api/admin/users/9999", json={"role": "user"}).status_code == 404
    assert admin.patch(f"/api/admin/users/{created['id']}", json={"role": "boss"}).status_code == 422


def test_non_admin_gets_403_on_admin_apis(user: ApiClient) -> None:
    for method, url in [("GET", "/api/admin/users"), ("GET", "/api/admin/models"), ("GET", "/api/admin/agents"),
                        ("POST", "/api/admin/users"), ("GET", "/api/admin/settings")]:
        r = user.request(method, url, json={} if method == "POST" else None)
        assert r.status_code == 403, (method, url)
        assert r.json()["error"]["code"] == "admin_required"


def test_disabled_account_cannot_sign_in_or_use_token(app: LiveApp, admin: ApiClient, make_user) -> None:
    bob = make_user("bob")
    token = bob.ok("POST", "/api/auth/tokens", json={"name": "t"})["token"]
    bob_id = bob.ok("GET", "/api/auth/me")["id"]
    admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"disabled": True})
    assert bob.get("/api/auth/me").status_code == 401  # existing session ended
    with app.client() as c:
        r = c.post("/api/auth/login", json={"username": "bob", "password": "password123"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "account_disabled"
    with ApiClient(app.url, headers={"Authorization": f"Bearer {token}"}) as bearer:
        assert bearer.get("/api/auth/me").status_code == 401
    admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"disabled": False})
    with app.client() as c:
        assert login(c, "bob")["username"] == "bob"


def test_last_admin_cannot_be_demoted(admin: ApiClient) -> None:
    me = admin.ok("GET", "/api/auth/me")
    r = admin.patch(f"/api/admin/users/{me['id']}", json={"role": "user"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "last_admin"
    r = admin.patch(f"/api/admin/users/{me['id']}", json={"disabled": True})
    assert r.status_code == 409


def test_parallel_first_sign_ups_make_one_admin(app: LiveApp) -> None:
    """On a fresh install, twelve sign-ups at once all counted no accounts: twelve admins, although
    sign-up was closed after the first."""

    async def burst() -> list[httpx.Response]:
        async with httpx.AsyncClient(base_url=app.url, timeout=60) as c:
            return await asyncio.gather(*(
                c.post("/api/auth/signup", json={"username": f"racer{i}", "password": "password123"})
                for i in range(12)
            ))

    answers = asyncio.run(burst())
    created = [r.json() for r in answers if r.status_code == 201]
    assert [me["role"] for me in created] == ["admin"]
    refused = [r.json()["error"]["code"] for r in answers if r.status_code != 201]
    assert refused == ["signup_closed"] * 11
    assert app.sql("SELECT count(*) FROM users")[0][0] == 1


def test_admin_ends_all_sessions_of_a_user(
    app: LiveApp, admin: ApiClient, make_user: Callable[..., ApiClient]
) -> None:
    bob = make_user("bob")
    with app.client() as second:
        second.ok("POST", "/api/auth/login", json={"username": "bob", "password": "password123"})
        me = bob.ok("GET", "/api/auth/me")
        admin.ok("POST", f"/api/admin/users/{me['id']}/sessions/end")
        assert bob.get("/api/auth/me").status_code == 401
        assert second.get("/api/auth/me").status_code == 401
    assert admin.ok("GET", "/api/auth/me")["username"] == "admin"
    assert admin.post("/api/admin/users/9999/sessions/end").json()["error"]["code"] == "user_not_found"
    assert bob.post(f"/api/admin/users/{me['id']}/sessions/end").status_code in (401, 403)
