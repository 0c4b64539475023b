"""Issue 2 in a real browser: the first admin signs up, sets up a model (the Test button reaches the fake
model server) and an agent through the pages, signs out, signs back in and finds them."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import sign_in
from tests.fakes.openai_server import FakeModel, FakeModelServer, text
from tests.support import LiveApp

pytestmark = pytest.mark.e2e


def test_first_admin_sets_up_a_model_and_an_agent(
    page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page.goto("/")
    expect(page).to_have_url(f"{app.url}/login")
    page.get_by_role("link", name="Create the first (administrator) account").click()
    expect(page.get_by_test_id("first-account-hint")).to_be_visible()
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password", exact=True).fill("password123")
    page.get_by_label("Repeat password").fill("password123")
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(f"{app.url}/setup")  # no model yet: the first-run setup page
    expect(page.get_by_test_id("user-menu")).to_contain_text("root")

    # A model pointing at the fake model server; the Test button shows success.
    page.get_by_role("link", name="Admin").click()
    page.locator(".subnav").get_by_role("link", name="Models").click()
    page.get_by_role("button", name="New model").click()
    dialog = page.locator("#model-dialog")
    dialog.get_by_label("Name").fill("Local fake")
    dialog.get_by_label("Base URL").fill(fake_model_server.base_url)
    dialog.get_by_label("Model", exact=True).fill("fake-model")
    dialog.get_by_label("API key").fill("sk-test-secret")
    dialog.get_by_label("Default model").check()
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    model_row = page.locator("#models-table tr[data-name='Local fake']")
    expect(model_row).to_contain_text("fake-model")
    expect(model_row).to_contain_text("set")
    fake_model.push(text("OK"))
    model_row.get_by_role("button", name="Test").click()
    expect(model_row.locator(".test-result")).to_have_text(re.compile(r"OK · \d+ ms"))
    stored = app.sql("SELECT name, model, api_key_enc FROM model_configs")
    assert stored[0][:2] == ("Local fake", "fake-model") and "sk-test-secret" not in stored[0][2]

    # Editing never prefills the key; it says one is set.
    model_row.get_by_role("button", name="Edit").click()
    expect(dialog.get_by_label("API key")).to_have_value("")
    expect(dialog.locator(".key-state")).to_contain_text("A key is stored")
    page.screenshot(path="/tmp/agentloft-model-dialog.png")
    dialog.get_by_role("button", name="Cancel").click()

    # An agent using that model.
    page.locator(".subnav").get_by_role("link", name="Agents").click()
    page.get_by_role("button", name="New agent").click()
    agent_dialog = page.locator("#agent-dialog")
    agent_dialog.get_by_label("Name").fill("Helper")
    agent_dialog.get_by_label("Slug").fill("helper")
    agent_dialog.get_by_label("Description").fill("Answers questions")
    agent_dialog.get_by_label("System prompt").fill("You are helpful.")
    agent_dialog.get_by_label("Model", exact=True).select_option(label="Local fake")
    agent_dialog.get_by_label("Max steps").fill("5")
    agent_dialog.get_by_role("button", name="Save").click()
    expect(agent_dialog).to_be_hidden()
    agent_row = page.locator("#agents-table tr[data-slug='helper']")
    expect(agent_row).to_contain_text("Helper")
    expect(agent_row).to_contain_text("Local fake")
    page.screenshot(path="/tmp/agentloft-admin-agents.png", full_page=True)

    # A duplicate slug is named beside the field in the dialog.
    page.get_by_role("button", name="New agent").click()
    agent_dialog.get_by_label("Name").fill("Other")
    agent_dialog.get_by_label("Slug").fill("helper")
    agent_dialog.get_by_role("button", name="Save").click()
    expect(agent_dialog.locator(".field-error")).to_have_text(["taken"])
    agent_dialog.get_by_role("button", name="Cancel").click()

    # Sign out, sign back in, everything is still there.
    page.get_by_test_id("user-menu").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page).to_have_url(f"{app.url}/login")
    page.goto("/admin/agents")
    expect(page).to_have_url(f"{app.url}/login?next=%2Fadmin%2Fagents")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password").fill("wrong-password")
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator(".form-error")).to_have_text("Wrong username or password.")
    page.screenshot(path="/tmp/agentloft-login.png")
    page.get_by_label("Password").fill("password123")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(f"{app.url}/admin/agents")
    expect(page.locator("#agents-table tr[data-slug='helper']")).to_contain_text("Local fake")
    page.locator(".subnav").get_by_role("link", name="Models").click()
    expect(page.locator("#models-table tr[data-name='Local fake']")).to_contain_text("default")
    page.screenshot(path="/tmp/agentloft-admin-models.png", full_page=True)


def test_admin_manages_users_tokens_and_settings(page: Page, app: LiveApp, new_page: Callable[..., Page]) -> None:
    page.goto("/signup")
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password", exact=True).fill("password123")
    page.get_by_label("Repeat password").fill("password123")
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(f"{app.url}/setup")

    page.goto("/admin/users")
    form = page.locator("#user-form")
    form.get_by_label("Username").fill("alice")
    form.get_by_label("Password").fill("password123")
    form.get_by_role("button", name="Add user").click()
    alice = page.locator("#users-table tr[data-username='alice']")
    expect(alice).to_contain_text("Active")
    alice.get_by_role("button", name="Disable").click()
    expect(alice).to_contain_text("Disabled")
    assert app.sql("SELECT disabled FROM users WHERE username='alice'") == [(1,)]
    alice.get_by_role("button", name="Enable").click()
    expect(alice).to_contain_text("Active")

    page.goto("/admin/settings")
    page.get_by_label("Anyone may sign up").check()
    expect(page.get_by_label("Name new chats with their model")).not_to_be_checked()  # off in test servers
    page.get_by_label("Name new chats with their model").check()
    page.get_by_label("Internal hosts tools may reach").fill("searx.local\n10.0.0.0/24")
    page.locator("#settings-form").get_by_role("button", name="Save").click()  # not the sign-in provider form
    expect(page.get_by_role("status")).to_be_visible()
    page.reload()
    expect(page.get_by_label("Internal hosts tools may reach")).to_have_value("searx.local\n10.0.0.0/24")
    expect(page.get_by_label("Name new chats with their model")).to_be_checked()

    page.goto("/tokens")
    page.get_by_label("Name").fill("script")
    page.get_by_role("button", name="Create token").click()
    secret = page.get_by_test_id("token-secret")
    expect(secret).to_contain_text("alt_")
    expect(page.locator("#tokens-table")).to_contain_text("script")
    page.reload()
    expect(page.get_by_test_id("token-secret")).to_be_hidden()

    # A plain user signs in and is refused the admin pages with an error page.
    other = new_page()
    sign_in(other, "alice", "password123")
    expect(other).to_have_url(f"{app.url}/chat")
    expect(other.get_by_role("link", name="Admin")).to_have_count(0)
    other.goto("/admin/models")
    expect(other.get_by_test_id("error-page")).to_have_attribute("data-code", "admin_required")
    expect(other.get_by_test_id("error-page")).not_to_contain_text("admin_required")


def test_language_follows_the_browser_and_switches(new_page: Callable[..., Page], app: LiveApp) -> None:
    page = new_page(locale="zh-CN", extra_http_headers={"Accept-Language": "zh-CN,zh;q=0.9"})
    page.goto("/login")
    expect(page.locator("h1")).to_have_text("登录")
    expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    page.get_by_test_id("lang-menu").click()
    page.locator("a[data-lang='en']").click()
    expect(page.locator("h1")).to_have_text("Sign in")
    expect(page).to_have_url(f"{app.url}/login")
    page.goto("/signup")
    expect(page.locator("h1")).to_have_text("Create account")
    page.get_by_test_id("lang-menu").click()
    page.locator("a[data-lang='zh-CN']").click()
    expect(page.locator("h1")).to_have_text("注册账号")
