"""The identity providers the sign-in tests run against: the test OpenID provider (one per session) and a
provider row pointing at it on the test's app."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.fakes.ldap_server import LdapServer
from tests.fakes.oidc_server import OidcProvider, query_of, sign_in_at_provider
from tests.support import ApiClient, LiveApp

SLUG = "corp"


@pytest.fixture(scope="session")
def oidc_server() -> Iterator[OidcProvider]:
    server = OidcProvider().start()
    yield server
    server.stop()


def allow_loopback(admin: ApiClient) -> None:
    """Test providers listen on 127.0.0.1, an internal address the network guard refuses unless allowed."""
    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})


@pytest.fixture
def oidc_provider(app: LiveApp, admin: ApiClient, oidc_server: OidcProvider) -> dict[str, Any]:
    """An enabled OIDC provider ``corp`` on the app, registered as a client at the test provider."""
    allow_loopback(admin)
    client_id = f"agentloft-{app.url.rsplit(':', 1)[1]}"
    oidc_server.register(client_id, "client-secret-1", [f"{app.url}/auth/oidc/{SLUG}/callback"])
    return admin.ok("POST", "/api/admin/auth-providers", json={
        "slug": SLUG, "name": "Corp SSO", "kind": "oidc", "issuer": oidc_server.issuer, "clientId": client_id,
        "clientSecret": "client-secret-1", "scopes": ["openid", "email", "profile", "groups"],
        "adminGroups": ["loft-admins"],
    })


@pytest.fixture
def provider_accounts(oidc_server: OidcProvider) -> Iterator[OidcProvider]:
    """The test provider, for a test that changes its accounts; they are put back afterwards, since the
    provider serves the whole run."""
    yield oidc_server
    oidc_server.reset_accounts()


@pytest.fixture
def provider_browser() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=10) as client:
        yield client


OidcSignIn = Callable[..., httpx.Response]


@pytest.fixture
def oidc_sign_in(provider_browser: httpx.Client) -> OidcSignIn:
    """Walk ``client`` (the app's side of a browser) through a sign-in as ``login``; the app's answer to
    the callback. ``tamper`` may change the authorization URL before the provider sees it."""

    def walk(client: ApiClient, login: str, password: str | None = None, *, next: str | None = None,
             tamper: Callable[[str], str] | None = None, slug: str = SLUG) -> httpx.Response:
        params = {"next": next} if next else {}
        start = client.get(f"/auth/oidc/{slug}/login", params=params)
        assert start.status_code == 303, start.text
        url = start.headers["location"]
        assert query_of(url)["code_challenge_method"] == "S256" and query_of(url)["nonce"]
        back = sign_in_at_provider(provider_browser, tamper(url) if tamper else url, login,
                                   password or f"{login}-pw")
        provider_browser.cookies.clear()
        return client.get(back)

    return walk


@pytest.fixture(scope="session")
def ldap_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LdapServer]:
    server = LdapServer(tmp_path_factory.mktemp("slapd")).start()
    yield server
    server.stop()


def ldap_body(url: str) -> dict[str, Any]:
    """An LDAP provider ``dir`` on the test directory at ``url``."""
    return {
        "slug": "dir", "name": "Directory", "kind": "ldap", "url": url,
        "bindDn": "cn=svc,dc=example,dc=com", "bindPassword": "svc-pw",
        "userSearchBase": "ou=people,dc=example,dc=com", "groupSearchBase": "ou=groups,dc=example,dc=com",
        "adminGroups": ["dir-admins"],
    }


@pytest.fixture
def ldap_provider(admin: ApiClient, ldap_server: LdapServer) -> dict[str, Any]:
    """An enabled LDAP provider ``dir`` on the app, on the test directory."""
    allow_loopback(admin)
    return admin.ok("POST", "/api/admin/auth-providers", json=ldap_body(ldap_server.url))


def groups_of(app: LiveApp, user_id: int) -> list[tuple[str, str]]:
    """The (name, source) of each group the user is in, read from the database."""
    return sorted((name, source) for name, source in app.sql(
        "SELECT g.name, g.source FROM groups g JOIN group_members m ON m.group_id = g.id WHERE m.user_id = ?",
        (user_id,)))
