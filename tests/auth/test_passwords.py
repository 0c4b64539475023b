"""Changing a password over real HTTP: one's own (the current one first, counted like a sign-in attempt)
and an administrator's reset. Either way the browsers still signed in with the old password are signed
out; API tokens stay."""

from __future__ import annotations

from tests.support import ApiClient, LiveApp, login


def test_a_user_changes_their_password_and_other_browsers_are_signed_out(app: LiveApp, make_user) -> None:
    bob = make_user("bob")
    with app.client() as laptop:
        login(laptop, "bob")
        token = bob.ok("POST", "/api/auth/tokens", json={"name": "script"})["token"]
        bob.ok("POST", "/api/auth/password", status=204,
               json={"currentPassword": "password123", "newPassword": "a-new-secret"})
        assert bob.get("/api/auth/me").status_code == 200  # the browser that changed it stays in
        assert laptop.get("/api/auth/me").status_code == 401  # every other one is out
    with app.client() as c:
        assert c.post("/api/auth/login", json={"username": "bob", "password": "password123"}).status_code == 401
        assert login(c, "bob", "a-new-secret")["username"] == "bob"
    with ApiClient(app.url, headers={"Authorization": f"Bearer {token}"}) as bearer:
        assert bearer.get("/api/auth/me").status_code == 200


def test_a_wrong_current_password_changes_nothing_and_is_counted(app: LiveApp, make_user) -> None:
    bob = make_user("bob")
    r = bob.post("/api/auth/password", json={"currentPassword": "not-it", "newPassword": "a-new-secret"})
    assert r.status_code == 422 and r.json()["error"]["code"] == "wrong_password"
    assert set(r.json()["error"]["fields"]) == {"currentPassword"}
    r = bob.post("/api/auth/password", json={"currentPassword": "password123", "newPassword": "short"})
    assert r.status_code == 422 and set(r.json()["error"]["fields"]) == {"newPassword"}
    with app.client() as c:
        assert login(c, "bob")["username"] == "bob"  # the old password still works
    codes = []  # guesses through a borrowed session meet the sign-in throttle (its waits double)
    while len(codes) < 20 and 429 not in codes:
        r = bob.post("/api/auth/password", json={"currentPassword": "guess", "newPassword": "a-new-secret"})
        codes.append(r.status_code)
    assert codes[-1] == 429 and r.json()["error"]["code"] == "login_throttled", codes
    assert len(codes) > 5, codes


def test_strangers_and_cross_site_requests_cannot_change_a_password(app: LiveApp, make_user) -> None:
    body = {"currentPassword": "password123", "newPassword": "a-new-secret"}
    with app.client() as anon:
        assert anon.post("/api/auth/password", json=body).status_code == 401
    bob = make_user("bob")
    r = bob.post("/api/auth/password", json=body, headers={"X-CSRF-Token": "wrong"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "csrf_failed"


def test_an_admin_resets_a_password_and_signs_the_account_out(app: LiveApp, admin: ApiClient, make_user) -> None:
    bob = make_user("bob")
    bob_id = bob.ok("GET", "/api/auth/me")["id"]
    updated = admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"password": "reset-by-admin"})
    assert "password" not in updated and "passwordHash" not in updated
    assert bob.get("/api/auth/me").status_code == 401
    with app.client() as c:
        assert login(c, "bob", "reset-by-admin")["username"] == "bob"
    assert admin.patch(f"/api/admin/users/{bob_id}", json={"password": "short"}).status_code == 422
    assert bob.patch(f"/api/admin/users/{bob_id}", json={"password": "reset-by-bob1"}).status_code in (401, 403)


def test_an_admin_setting_their_own_password_stays_signed_in(app: LiveApp, admin: ApiClient) -> None:
    me = admin.ok("GET", "/api/auth/me")
    with app.client() as elsewhere:
        login(elsewhere, me["username"])
        admin.ok("PATCH", f"/api/admin/users/{me['id']}", json={"password": "a-new-secret"})
        assert admin.get("/api/auth/me").status_code == 200
        assert elsewhere.get("/api/auth/me").status_code == 401
