"""Signing in on the usual form with an LDAP directory (Debian's ``slapd``, seeded, with TLS from a
throwaway CA): right and wrong passwords, groups synced, admin groups, the throttle, LDAPS and StartTLS
with the provider's CA, and a directory that cannot be asked or is not trusted."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.ldap_server import LdapServer
from tests.fakes.tls_ca import TestCa
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


def _unavailable(r: httpx.Response) -> bool:
    return r.status_code == 503 and r.json()["error"]["code"] == "directory_unavailable"


@pytest.mark.parametrize("tls", ["ldaps", "startTls"])
def test_sign_in_over_tls_with_the_providers_ca(
    admin: ApiClient, app: LiveApp, ldap_server: LdapServer, ldap_provider: dict[str, Any], tls: str
) -> None:
    change = ({"url": ldap_server.ldaps_url} if tls == "ldaps" else {"startTls": True})
    change["tlsCaCert"] = ldap_server.ca.pem
    admin.ok("PUT", f"/api/admin/auth-providers/{ldap_provider['id']}", json=change)
    me = _login(app, "dave", "dave-pw").json()
    assert me["authProvider"] == "dir" and groups_of(app, me["id"]) == [("dir-admins", "dir"), ("ops", "dir")]
    assert _login(app, "dave", "wrong").status_code == 401  # the password is still checked, over TLS


@pytest.mark.parametrize("tls", ["ldaps", "startTls"])
@pytest.mark.parametrize("trusted", ["system", "another CA"])
def test_a_certificate_not_trusted_is_a_clear_refusal(
    admin: ApiClient, app: LiveApp, ldap_server: LdapServer, ldap_provider: dict[str, Any], tls: str, trusted: str
) -> None:
    """Without ``tlsCaCert`` only the system's CAs are trusted, and with another CA only that one."""
    change = ({"url": ldap_server.ldaps_url} if tls == "ldaps" else {"startTls": True})
    ca = TestCa().pem if trusted == "another CA" else ""
    admin.ok("PUT", f"/api/admin/auth-providers/{ldap_provider['id']}", json={**change, "tlsCaCert": ca})
    assert _unavailable(_login(app, "dave", "dave-pw"))
    assert _login(app, "admin", "password123").status_code == 200


@pytest.mark.parametrize("change", [{"bindPassword": "wrong"}, {"url": "ldap://127.0.0.1:1"}])
def test_a_directory_that_cannot_be_asked_says_so(
    admin: ApiClient, app: LiveApp, ldap_provider: dict[str, Any], change: dict[str, Any]
) -> None:
    """A refused service account, a directory that does not answer: nobody checked the password."""
    admin.ok("PUT", f"/api/admin/auth-providers/{ldap_provider['id']}", json=change)
    r = _login(app, "dave", "dave-pw")
    assert _unavailable(r) and "could not be checked" in r.json()["error"]["message"]
    assert _login(app, "admin", "password123").status_code == 200


def test_another_directory_that_answers_decides(admin: ApiClient, app: LiveApp, ldap_server: LdapServer,
                                                ldap_provider: dict[str, Any]) -> None:
    """One directory down and another that knows the person: the one that answers signs them in, or says
    their password is wrong."""
    admin.ok("POST", "/api/admin/auth-providers", json={**ldap_body("ldap://127.0.0.1:1"), "slug": "down"})
    assert _login(app, "dave", "dave-pw").json()["authProvider"] == "dir"
    assert _login(app, "dave", "wrong").status_code == 401


def test_a_switched_off_directory_is_not_asked(admin: ApiClient, app: LiveApp, ldap_provider: dict[str, Any]) -> None:
    admin.ok("PUT", f"/api/admin/auth-providers/{ldap_provider['id']}", json={"enabled": False})
    assert _login(app, "dave", "dave-pw").status_code == 401


def test_the_network_guard_applies(admin: ApiClient, app: LiveApp, ldap_provider: dict[str, Any]) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": []})
    assert _unavailable(_login(app, "dave", "dave-pw"))


@pytest.fixture
def strict_app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    yield from running_app(tmp_path, template_db, login_max_failures=2, login_backoff_seconds=600.0)


def _strict_provider(app: LiveApp, body: dict[str, Any]) -> int:
    with app.client() as admin:
        admin.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
        admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
        return admin.ok("POST", "/api/admin/auth-providers", json=body)["id"]


def test_wrong_directory_passwords_count_for_the_throttle(strict_app: LiveApp, ldap_server: LdapServer) -> None:
    _strict_provider(strict_app, ldap_body(ldap_server.url))
    assert [_login(strict_app, "dave", "wrong").status_code for _ in range(2)] == [401, 401]
    r = _login(strict_app, "dave", "dave-pw")
    assert r.status_code == 429 and r.json()["error"]["code"] == "login_throttled"


def test_an_untrusted_directory_does_not_count_for_the_throttle(strict_app: LiveApp, ldap_server: LdapServer) -> None:
    """Three attempts the directory could not check (limit: two), then the CA is fixed: dave gets in. A
    local account's own wrong password still counts while the directory is down."""
    provider_id = _strict_provider(strict_app, {**ldap_body(ldap_server.ldaps_url), "tlsCaCert": TestCa().pem})
    assert all(_unavailable(_login(strict_app, "dave", "dave-pw")) for _ in range(3))
    with strict_app.client() as admin:
        admin.ok("POST", "/api/auth/login", json={"username": "admin", "password": "password123"})
        admin.ok("PUT", f"/api/admin/auth-providers/{provider_id}", json={"tlsCaCert": ldap_server.ca.pem})
        admin.ok("POST", "/api/admin/users", json={"username": "local", "password": "password123"})
    assert _login(strict_app, "dave", "dave-pw").status_code == 200
    with strict_app.client() as admin:
        admin.ok("POST", "/api/auth/login", json={"username": "admin", "password": "password123"})
        admin.ok("PUT", f"/api/admin/auth-providers/{provider_id}", json={"tlsCaCert": ""})
    assert all(_unavailable(_login(strict_app, "local", "wrong")) for _ in range(2))
    assert _login(strict_app, "local", "password123").status_code == 429
