"""In a real browser: a person finds how to change their password from their menu, and an administrator
sets a new one for someone who forgot theirs; the old password stops working both times."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import api, sign_in

pytestmark = pytest.mark.e2e


def test_change_own_password_from_the_menu(admin_page: Page, new_page: Callable[..., Page]) -> None:
    api(admin_page, "POST", "/api/admin/users", {"username": "bob", "password": "password123"})
    page = new_page()
    sign_in(page, "bob", "password123")
    expect(page).to_have_url(re.compile(r"/chat$"))
    page.get_by_test_id("user-menu").click()
    page.get_by_role("link", name="Change password").click()
    form = page.locator("#password-form")
    form.get_by_label("Current password").fill("not-my-password")
    form.get_by_label("New password").fill("a-new-secret")
    form.get_by_role("button", name="Change password").click()
    expect(form.get_by_text("the current password is wrong")).to_be_visible()
    form.get_by_label("Current password").fill("password123")
    form.get_by_role("button", name="Change password").click()
    expect(page.get_by_test_id("password-changed")).to_be_visible()
    expect(form.get_by_label("New password")).to_have_value("")

    other = new_page()
    sign_in(other, "bob", "password123")
    expect(other.get_by_role("alert")).to_contain_text("Wrong username or password")
    sign_in(other, "bob", "a-new-secret")
    expect(other).to_have_url(re.compile(r"/chat$"))


def test_admin_sets_a_password_for_a_user(admin_page: Page, new_page: Callable[..., Page]) -> None:
    api(admin_page, "POST", "/api/admin/users", {"username": "carol", "password": "password123"})
    page = admin_page
    page.goto("/admin/users")
    row = page.locator('tr[data-username="carol"]')
    row.get_by_role("button", name="Set password").click()
    row.get_by_label("New password for carol").fill("given-by-admin")
    row.get_by_role("button", name="Save").click()
    expect(page.locator("#users-status")).to_have_text("Password set for carol; their browsers are signed out.")
    expect(row.get_by_role("button", name="Set password")).to_be_visible()

    other = new_page()
    sign_in(other, "carol", "given-by-admin")
    expect(other).to_have_url(re.compile(r"/chat$"))
