"""Browser fixtures: one headless Chromium (Debian's /usr/bin/chromium) per session, a fresh context per
test, pointed at that test's live server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, Route, sync_playwright

from tests.support import LiveApp

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def csp_violations() -> list[str]:
    """What the pages' content security policy refused, as the browser logged it; a test that provokes a
    refusal on purpose takes it out of this list."""
    return []


@pytest.fixture
def new_page(browser: Browser, app: LiveApp, csp_violations: list[str]) -> Iterator[Callable[..., Page]]:
    """Open a page in a new browser context (its own cookies); keyword arguments go to the context.
    Every browser test also checks that the pages broke none of the server's content security policy
    (``web.security_headers``): a script, style or request it blocks is a feature that silently stops
    working, so the test fails on it."""
    contexts: list[BrowserContext] = []
    violations = csp_violations

    def make(**context_options: Any) -> Page:
        options = {"base_url": app.url, "locale": "en-US", "viewport": {"width": 1280, "height": 860}}
        context = browser.new_context(**{**options, **context_options})
        context.set_default_timeout(10_000)
        contexts.append(context)
        page = context.new_page()
        page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
        return page

    yield make
    for context in contexts:
        context.close()
    assert violations == [], "the page broke the content security policy"


@pytest.fixture
def page(new_page: Callable[..., Page]) -> Page:
    return new_page()


def csrf_headers(page: Page) -> dict[str, str]:
    """The header a page script sends on writes: the readable CSRF cookie echoed back."""
    cookies = {c["name"]: c["value"] for c in page.context.cookies()}
    return {"X-CSRF-Token": cookies.get("agentloft_csrf", "")}


def sign_in(page: Page, username: str, password: str) -> None:
    """Sign in through the sign-in form, as a person would."""
    page.goto("/login")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()


def api(page: Page, method: str, url: str, body: Any = None) -> Any:
    """Call the JSON API as the page's signed-in user (shares the context's cookies)."""
    page.goto("/login") if not page.url.startswith("http") else None
    response = page.request.fetch(url, method=method, data=body, headers=csrf_headers(page))
    assert response.ok, f"{method} {url}: {response.status} {response.text()}"
    return response.json() if response.body() else None



def add_fake_model(page: Page, server: Any, name: str = "Fake") -> dict[str, Any]:
    """The fake model (``server``: a ``FakeModelServer``) added as the default model, as every chat test
    starts."""
    return api(page, "POST", "/api/admin/models", {"name": name, "provider": "openai",
                                                  "baseUrl": server.base_url, "model": "fake", "isDefault": True})

@pytest.fixture
def admin_page(new_page: Callable[..., Page]) -> Page:
    """A page signed in as the instance's first account (an admin), created through the API."""
    page = new_page()
    page.goto("/login")
    api(page, "POST", "/api/auth/signup", {"username": "root", "password": "password123"})
    return page


class HeldRequests:
    """Requests to ``pattern`` kept waiting until ``release``: what a page does while a response is slow."""

    def __init__(self, page: Page, pattern: str) -> None:
        self.page, self.pattern = page, pattern
        self.routes: list[Route] = []
        page.route(pattern, lambda route: self.routes.append(route))

    def release(self) -> None:
        """Let the held requests (at least one) go on, and every later one through untouched."""
        while not self.routes:  # the route's handler runs on the next message from the browser
            self.page.wait_for_timeout(10)
        for route in self.routes:
            route.continue_()
        self.page.unroute(self.pattern)

