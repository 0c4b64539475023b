"""Signing in on the usual form with an LDAP directory (Debian's ``slapd``, seeded): right and wrong
passwords, groups synced, admin groups, the throttle, and a directory that cannot be asked."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ldap_server import LdapServer
from tests.identity.conftest import groups_of, ldap_body
from tests.support import ApiClient, LiveApp, running_app


def _login(app: LiveApp, username: str, password: str) -> httpx.Response:
    with app.client() as c:
        return c.post("/api/auth/login", json={"username": username, "password": password})


def test_directory_people_sign_in_on_the_form(app: LiveApp, admin: ApiClient, ldap_provider: dict[str, Any]) -> None:
    with app.client() as browser:
        me = browser.ok("POST", "/api/auth/login", json={"username": "dave", "password": "dave-pw"})
        assert me["authProvider"] == "dir" and me["role"] == "admin"  # in dir-admins
        assert browser.ok("GET", "/api/auth/me")["id"] == me["id"]
    assert groups_of(app, me["id"]) == [("dir-admins", "dir"), ("ops", "dir")]
    erin = _login(app, "erin", "erin-pw").json()
    assert erin["role"] == "user" and groups_of(app, erin["id"]) == [("ops", "dir")]
    again = _login(app, "dave", "dave-pw").json()
    assert again["id"] == me["id"]  # linked by the entry's DN
    users = {u["username"]: u for u in admin.ok("GET", "/api/admin/users")["items"]}
    assert users["dave"]["email"] == "dave@example.com" and users["dave"]["authProvider"] == "dir"
    assert users["admin"]["authProvider"] == "local"  # local accounts are tried first and still work
    assert _login(app, "admin", "password123").status_code == 200


@pytest.mark.parametrize("username,password", [("dave", "wrong"), ("dave", " "), ("nobody", "x"),
                                               ("*", "dave-pw"), ("dave)(uid=*", "dave-pw")])
def test_wrong_passwords_and_unknown_people_are_refused(
    app: LiveApp, ldap_provider: dict[str, Any], username: str, password: str
) -> None:
    with app.client() as c:
        r = c.post("/api/auth/login", json={"username": username, "password": password})
        assert r.status_code == 401 and r.json()["error"]["code"] == "invalid_credentials"
        assert c.get("/api/auth/me").status_code == 401


def test_account_creation_off_is_refused(admin: ApiClient, app: LiveApp, ldap_provider: dict[str, Any]) -> None:
    admin.ok("PUT", f"/api/admin/auth-providers/{ldap_provider['id']}", json={"autoCreateUsers": False})
    r = _login(app, "erin", "erin-pw")
    assert r.status_code == 403 and r.json()["error"]["code"] == "sso_account_creation_off"


@pytest.mark.parametrize("change", [{"bindPassword": "wrong"}, {"startTls": True}, {"enabled": False}])
def test_a_directory_that_cannot_be_asked_signs_nobody_in(
    admin: ApiClient, app: LiveApp, ldap_provider: dict[str, Any], change: dict[str, Any]
) -> None:
    """A refused service account, StartTLS against a server without TLS, a provider switched off."""
    admin.ok("PUT", f"/api/admin/auth-providers/{ldap_provider['id']}", json=change)
    assert _login(app, "dave", "dave-pw").status_code == 401
    assert _login(app, "admin", "password123").status_code == 200


def test_the_network_guard_applies(admin: ApiClient, app: LiveApp, ldap_provider: dict[str, Any]) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": []})
    assert _login(app, "dave", "dave-pw").status_code == 401


@pytest.fixture
def strict_app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    yield from running_app(tmp_path, template_db, login_max_failures=2, login_backoff_seconds=600.0)


def test_wrong_directory_passwords_count_for_the_throttle(strict_app: LiveApp, ldap_server: LdapServer) -> None:
    with strict_app.client() as admin:
        admin.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
        admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
        admin.ok("POST", "/api/admin/auth-providers", json=ldap_body(ldap_server.url))
    assert [_login(strict_app, "dave", "wrong").status_code for _ in range(2)] == [401, 401]
    r = _login(strict_app, "dave", "dave-pw")
    assert r.status_code == 429 and r.json()["error"]["code"] == "login_throttled"
