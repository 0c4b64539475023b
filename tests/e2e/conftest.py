"""Browser fixtures: one headless Chromium (Debian's /usr/bin/chromium) per session, a fresh context per
test, pointed at that test's live server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, sync_playwright

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
def new_page(browser: Browser, app: LiveApp) -> Iterator[Callable[..., Page]]:
    """Open a page in a new browser context (its own cookies); keyword arguments go to the context."""
    contexts: list[BrowserContext] = []

    def make(**context_options: Any) -> Page:
        options = {"base_url": app.url, "locale": "en-US", "viewport": {"width": 1280, "height": 860}}
        context = browser.new_context(**{**options, **context_options})
        context.set_default_timeout(10_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.fixture
def page(new_page: Callable[..., Page]) -> Page:
    return new_page()
