"""Issue 14 point 6 in a real browser: dark mode follows the system, and the theme button's choice is
remembered across pages and reloads (rendered by the server, so no page flashes the other colours)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.support import LiveApp

pytestmark = pytest.mark.e2e


def background(page: Page) -> str:
    return page.evaluate("getComputedStyle(document.documentElement).backgroundColor")


LIGHT, DARK = "rgb(245, 246, 248)", "rgb(15, 17, 21)"


def test_follows_the_system_and_remembers_a_choice(new_page: Callable[..., Page], app: LiveApp) -> None:
    page = new_page(color_scheme="dark")
    page.goto("/login")
    assert background(page) == DARK
    toggle = page.get_by_test_id("theme-toggle")
    expect(toggle).to_have_attribute("aria-label", "Theme: as the system (switch to dark)")
    toggle.click()  # system → dark: still dark, now chosen
    expect(page.locator("html")).to_have_attribute("data-theme", "dark")
    toggle.click()  # dark → light, although the system is dark
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    assert background(page) == LIGHT
    page.goto("/signup")  # another page, rendered with the choice
    expect(page.locator("html")).to_have_attribute("data-theme", "light")
    assert background(page) == LIGHT
    page.screenshot(path="/tmp/shots/theme-light.png")
    page.get_by_test_id("theme-toggle").click()  # light → the system's again
    page.reload()
    expect(page.locator("html")).not_to_have_attribute("data-theme", "light")
    assert background(page) == DARK
    page.screenshot(path="/tmp/shots/theme-dark.png")

    light = new_page(color_scheme="light")
    light.goto("/login")
    assert background(light) == LIGHT
