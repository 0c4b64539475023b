"""The identity providers the sign-in tests run against: the test OpenID provider (one per session) and a
provider row pointing at it on the test's app."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

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
