"""Signing in with OpenID Connect against a real provider (npm ``oidc-provider``) over HTTP: the whole
flow, each check that refuses (state, nonce, PKCE, domain, account creation, a cancelled login), linking,
admin groups, and key rotation."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest

from tests.fakes.oidc_server import OidcProvider, query_of, sign_in_at_provider
from tests.identity.conftest import OidcSignIn, groups_of
from tests.support import ApiClient, LiveApp


def _replace_param(url: str, name: str, value: str) -> str:
    parts = urlsplit(url)
    query = {**query_of(url), name: value}
    return parts._replace(query=urlencode(query)).geturl()


def _refused_with(resp: Any, code: str) -> None:
    assert resp.status_code == 303
    assert urlsplit(resp.headers["location"]).path == "/login"
    assert query_of(resp.headers["location"])["error"] == code
    assert "agentloft_session" not in resp.cookies


def test_sign_in_creates_links_and_promotes(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn
) -> None:
    with app.client() as browser:
        resp = oidc_sign_in(browser, "alice", next="/chat?x=1")
        assert resp.status_code == 303 and resp.headers["location"] == "/chat?x=1"
        me = browser.ok("GET", "/api/auth/me")
        assert me["username"] == "alice" and me["authProvider"] == "corp"
        assert me["role"] == "admin"  # a member of loft-admins
    assert groups_of(app, me["id"]) == [("engineering", "corp"), ("loft-admins", "corp")]
    with app.client() as again:
        oidc_sign_in(again, "alice")
        assert again.ok("GET", "/api/auth/me")["id"] == me["id"]  # linked by (provider, subject)
    users = admin.ok("GET", "/api/admin/users")["items"]
    alice = next(u for u in users if u["username"] == "alice")
    assert alice["authProvider"] == "corp" and alice["email"] == "alice@example.com"
    assert next(u for u in users if u["username"] == "admin")["authProvider"] == "local"
    # An account a provider made has no password the form accepts.
    with app.client() as form:
        assert form.post("/api/auth/login", json={"username": "alice", "password": "!external"}).status_code == 401
    # The audit trail words a provider's sign-ins as it words the form's, naming the provider.
    trail = admin.ok("GET", "/api/admin/audit", params={"type": "auth.sign_in", "userId": me["id"]})["items"]
    assert [e["detail"]["method"] for e in trail] == ["oidc:corp", "oidc:corp"]


def test_leaving_the_admin_group_demotes(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn
) -> None:
    with app.client() as browser:
        oidc_sign_in(browser, "alice")
        assert browser.ok("GET", "/api/auth/me")["role"] == "admin"
    admin.ok("PUT", f"/api/admin/auth-providers/{oidc_provider['id']}", json={"adminGroups": ["other"]})
    with app.client() as browser:
        oidc_sign_in(browser, "alice")
        assert browser.ok("GET", "/api/auth/me")["role"] == "user"


def test_bad_state_is_refused(app: LiveApp, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn) -> None:
    with app.client() as browser:
        resp = oidc_sign_in(browser, "alice", tamper=lambda url: _replace_param(url, "state", "forged"))
        _refused_with(resp, "sso_state_invalid")
        assert browser.get("/api/auth/me").status_code == 401
    with app.client() as stranger:  # a callback without the flow cookie
        _refused_with(stranger.get("/auth/oidc/corp/callback?code=x&state=y"), "sso_state_invalid")
    failed = app.sql("SELECT detail FROM audit_events WHERE type = 'auth.sign_in_failed'")
    assert len(failed) == 2 and all("sso_state_invalid" in str(d) and "oidc:corp" in str(d) for (d,) in failed)


def test_wrong_nonce_is_refused(app: LiveApp, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn) -> None:
    with app.client() as browser:
        resp = oidc_sign_in(browser, "alice", tamper=lambda url: _replace_param(url, "nonce", "another"))
        _refused_with(resp, "sso_nonce_invalid")
        assert browser.get("/api/auth/me").status_code == 401


def test_pkce_verifier_is_checked(app: LiveApp, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn) -> None:
    other_challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
    with app.client() as browser:
        resp = oidc_sign_in(browser, "alice", tamper=lambda url: _replace_param(url, "code_challenge", other_challenge))
        _refused_with(resp, "sso_code_rejected")


def test_cancelled_login_lands_on_the_sign_in_page(
    app: LiveApp, oidc_provider: dict[str, Any]
) -> None:
    with app.client() as browser:
        start = browser.get("/auth/oidc/corp/login")
        state = query_of(start.headers["location"])["state"]
        resp = browser.get(f"/auth/oidc/corp/callback?error=access_denied&state={state}")
        _refused_with(resp, "sso_provider_error")
        page = browser.get(resp.headers["location"])
        assert "The identity provider refused the sign-in" in page.text


def test_domain_not_allowed_and_creation_off(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn
) -> None:
    path = f"/api/admin/auth-providers/{oidc_provider['id']}"
    admin.ok("PUT", path, json={"allowedDomains": ["example.com"]})
    with app.client() as browser:
        _refused_with(oidc_sign_in(browser, "bob"), "sso_domain_not_allowed")  # bob@other.example
    admin.ok("PUT", path, json={"autoCreateUsers": False})
    with app.client() as browser:
        _refused_with(oidc_sign_in(browser, "carol"), "sso_account_creation_off")
    assert [u["username"] for u in admin.ok("GET", "/api/admin/users")["items"]] == ["admin"]


def test_link_by_email_needs_a_verified_email_and_the_flag(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn
) -> None:
    local = admin.ok("POST", "/api/admin/users", json={"username": "carol-local", "password": "password123"})
    admin.ok("PATCH", f"/api/admin/users/{local['id']}", json={"email": "Carol@example.com"})
    bob = admin.ok("POST", "/api/admin/users", json={"username": "bob-local", "password": "password123"})
    admin.ok("PATCH", f"/api/admin/users/{bob['id']}", json={"email": "bob@other.example"})
    admin.ok("PUT", f"/api/admin/auth-providers/{oidc_provider['id']}", json={"linkByEmail": True})
    with app.client() as browser:
        oidc_sign_in(browser, "carol")
        assert browser.ok("GET", "/api/auth/me")["id"] == local["id"]
    with app.client() as browser:  # bob's email is not verified: a new account, not bob-local
        oidc_sign_in(browser, "bob")
        me = browser.ok("GET", "/api/auth/me")
        assert me["id"] != bob["id"] and me["username"] == "bob"


def test_without_link_by_email_a_new_account_is_made(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn
) -> None:
    admin.ok("POST", "/api/admin/users", json={"username": "carol", "password": "password123"})
    with app.client() as browser:
        oidc_sign_in(browser, "carol")
        assert browser.ok("GET", "/api/auth/me")["username"] == "carol-2"


def test_disabled_account_is_refused(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn
) -> None:
    with app.client() as browser:
        oidc_sign_in(browser, "carol")
        carol = browser.ok("GET", "/api/auth/me")
    admin.ok("PATCH", f"/api/admin/users/{carol['id']}", json={"disabled": True})
    with app.client() as browser:
        _refused_with(oidc_sign_in(browser, "carol"), "account_disabled")


def test_rotated_keys_are_fetched_again(
    app: LiveApp, oidc_server: OidcProvider, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn
) -> None:
    with app.client() as browser:
        oidc_sign_in(browser, "alice")
        assert browser.get("/api/auth/me").status_code == 200
    oidc_server.rotate_keys()
    with app.client() as browser:
        resp = oidc_sign_in(browser, "carol")
        assert resp.status_code == 303 and resp.headers["location"] == "/", resp.headers.get("location")
        assert browser.ok("GET", "/api/auth/me")["username"] == "carol"


def test_provider_off_the_allow_list_is_refused(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any]
) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": []})
    with app.client() as browser:
        _refused_with(browser.get("/auth/oidc/corp/login"), "sso_provider_unreachable")


@pytest.mark.parametrize("next_path", ["//evil.example/", "https://evil.example/"])
def test_next_is_same_site_only(
    app: LiveApp, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn, next_path: str
) -> None:
    with app.client() as browser:
        assert oidc_sign_in(browser, "alice", next=next_path).headers["location"] == "/"


def _corp_group(admin: ApiClient, name: str) -> int:
    return next(g["id"] for g in admin.ok("GET", "/api/admin/groups")["items"]
                if (g["name"], g["source"]) == (name, "corp"))


def test_groups_left_at_the_provider_are_left_at_the_next_sign_in(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn,
    provider_accounts: OidcProvider, model_id: int,
) -> None:
    """Removed from a group at the provider, a person leaves it at their next sign-in, and with it the
    agent limited to that group: in the new session and in one they opened before."""
    provider_accounts.change_account("carol", groups=["engineering", "design"])
    with app.client() as before, app.client() as after:
        oidc_sign_in(before, "carol")
        carol = before.ok("GET", "/api/auth/me")
        engineering = _corp_group(admin, "engineering")
        admin.ok("POST", "/api/admin/agents", json={"slug": "eng", "name": "Eng", "systemPrompt": "You build.",
                                                      "modelId": model_id, "groupIds": [engineering]})
        assert before.get("/api/agents/eng").status_code == 200
        assert groups_of(app, carol["id"]) == [("design", "corp"), ("engineering", "corp")]

        provider_accounts.change_account("carol", groups=["design"])
        oidc_sign_in(after, "carol")
        assert after.ok("GET", "/api/auth/me")["id"] == carol["id"]
        assert groups_of(app, carol["id"]) == [("design", "corp")]
        for client in (after, before):
            r = client.get("/api/agents/eng")
            assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"
            assert "eng" not in [a["slug"] for a in client.ok("GET", "/api/agents")["items"]]
            chat = client.post("/api/agents/eng/chat", json={"message": "hi"})
            assert chat.status_code == 404 and chat.json()["error"]["code"] == "agent_not_found"


def test_a_person_removed_at_the_provider_cannot_sign_in_again(
    app: LiveApp, admin: ApiClient, oidc_provider: dict[str, Any], oidc_sign_in: OidcSignIn,
    provider_accounts: OidcProvider, provider_browser: Any,
) -> None:
    """The provider decides who authenticates: an account it removed never gets past its login form, and
    one it refuses after the login (disabled there) comes back with an error; neither gets a session."""
    for login in ("carol", "alice"):
        with app.client() as browser:
            oidc_sign_in(browser, login)
            assert browser.ok("GET", "/api/auth/me")["username"] == login
    provider_accounts.change_account("carol", removed=True)
    with app.client() as browser:
        start = browser.get("/auth/oidc/corp/login")
        assert sign_in_at_provider(provider_browser, start.headers["location"], "carol", "carol-pw") == "form-refused"
        assert browser.get("/api/auth/me").status_code == 401
    provider_accounts.change_account("alice", disabled=True)
    with app.client() as browser:
        _refused_with(oidc_sign_in(browser, "alice"), "sso_provider_error")
        assert browser.get("/api/auth/me").status_code == 401
    signed_in = app.sql("SELECT detail FROM audit_events WHERE type = 'auth.sign_in'")
    assert len([d for (d,) in signed_in if "oidc:corp" in str(d)]) == 2, "only the first two sign-ins"
