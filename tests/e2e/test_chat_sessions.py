"""Issue 14 point 5 in a real browser, in both languages: a generated title after the first reply, the
list grouped by date with a badge where an approval waits, rename in place and delete from the keyboard,
and search over titles and message text."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, call, text
from tests.support import LiveApp

pytestmark = pytest.mark.e2e


def _asks_for_title(body: dict[str, Any]) -> bool:
    return any("You name conversations" in str(m.get("content")) for m in body["messages"])


def days_ago(days: int) -> datetime:
    """A moment ``days`` before now, computed here so the same statement runs on SQLite and PostgreSQL."""
    return datetime.now(UTC) - timedelta(days=days)


def send(page: Page, message: str, button: str = "Send") -> None:
    page.locator("#message-input").fill(message)
    page.get_by_role("button", name=button, exact=True).click()


def test_titles_groups_badges_rename_delete_and_search(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    tool = api(page, "POST", "/api/agent-tools", {"slug": "calc", "name": "Calc", "type": "calculator",
                                                  "needsApproval": True})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tool["id"]}])
    api(page, "PUT", "/api/admin/settings", {"generateTitles": True})  # off by default in tests
    page.goto("/chat")

    # 1. a title from the first exchange replaces the first words
    fake_model.push(text("Use a pour-over at 93 degrees."), Step(text="Pour-over coffee", match=_asks_for_title))
    send(page, "How do I brew 咖啡 by hand?")
    expect(page.locator("#chat-title")).to_have_text("Pour-over coffee")
    items = page.locator("#session-list .session-item")
    expect(items.first.locator(".session-title")).to_have_text("Pour-over coffee")

    # 2. a chat waiting for an approval carries a badge
    page.goto("/chat")
    fake_model.push(call("calc", {"expression": "1+1"}))
    send(page, "add one and one")
    expect(page.locator(".tool-card").get_by_test_id("tool-state")).to_have_text("Waiting for approval")
    waiting = items.filter(has_text="add one and one")
    expect(waiting.get_by_test_id("approval-badge")).to_have_text("Needs approval")
    expect(page.get_by_test_id("regenerate")).to_have_count(0)  # the server would refuse: an approval waits

    # 3. grouped by date
    old = app.sql("SELECT id FROM agent_sessions WHERE title = 'Pour-over coffee'")[0][0]
    app.sql("UPDATE agent_sessions SET updated_at = ? WHERE id = ?", (app.stamp(days_ago(3)), old))
    page.reload()
    groups = page.locator(".session-group-title")
    expect(groups).to_have_text(["Today", "Previous 7 days"])

    # 4. rename in place, from the keyboard
    coffee = items.filter(has_text="Pour-over coffee")
    coffee.locator("a").focus()
    page.keyboard.press("Tab")
    expect(coffee.get_by_role("button", name="Rename “Pour-over coffee”")).to_be_focused()
    page.keyboard.press("Enter")
    rename = page.get_by_label("Rename", exact=True)
    rename.fill("Hand-brewed coffee")
    # Pinyin typed into an input method: the Enter that confirms it (flagged isComposing) does not save
    # the half-typed title; the reader then takes the letters back and saves with Enter.
    rename.dispatch_event("compositionstart", {"data": ""})
    page.keyboard.insert_text("ka")
    rename.evaluate("e => e.dispatchEvent(new KeyboardEvent('keydown', "
                    "{key: 'Enter', isComposing: true, bubbles: true, cancelable: true}))")
    rename.dispatch_event("compositionend", {"data": "ka"})
    expect(rename).to_have_value("Hand-brewed coffeeka")
    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    page.keyboard.press("Enter")
    expect(items.filter(has_text="Hand-brewed coffee")).to_have_count(1)
    assert api(page, "GET", f"/api/agent-sessions/{old}")["title"] == "Hand-brewed coffee"
    # the buttons name the new title at once, before anything draws the list again
    renamed = items.filter(has_text="Hand-brewed coffee")
    expect(renamed.get_by_role("button", name="Rename “Hand-brewed coffee”")).to_be_focused()
    expect(renamed.get_by_role("button", name="Delete “Hand-brewed coffee”")).to_have_count(1)

    # 5. search titles and message text; Escape brings the list back
    search = page.get_by_label("Search chats")
    search.fill("93 degrees")
    expect(items).to_have_count(1)
    expect(items.first.locator(".session-snippet")).to_contain_text("93 degrees")
    search.fill("咖啡")
    expect(items.first.locator(".session-title")).to_have_text("Hand-brewed coffee")
    search.fill("nothing like this")
    expect(page.locator(".no-results")).to_have_text("No chat matches.")
    search.press("Escape")
    expect(items).to_have_count(2)
    page.screenshot(path="/tmp/shots/chat-sessions.png")

    # 6. delete from the keyboard, asked in the page's own dialog, never the browser's confirm() (which
    # this test would note and dismiss)
    browser_dialogs: list[str] = []

    def browser_dialog(dialog: Dialog) -> None:
        browser_dialogs.append(dialog.message)
        dialog.dismiss()

    page.on("dialog", browser_dialog)
    target = items.filter(has_text="Hand-brewed coffee")
    target.get_by_role("button", name="Delete “Hand-brewed coffee”").focus()
    page.keyboard.press("Enter")
    ask = page.get_by_role("dialog")
    expect(ask).to_contain_text("Hand-brewed coffee")
    expect(ask.get_by_role("button", name="Cancel")).to_be_focused()  # a stray Enter keeps the chat
    page.keyboard.press("Escape")
    expect(ask).to_have_count(0)
    expect(items).to_have_count(2)
    target.get_by_role("button", name="Delete “Hand-brewed coffee”").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(items).to_have_count(1)
    assert browser_dialogs == []

    # The same list in Chinese.
    page.context.add_cookies([{"name": "agentloft_lang", "value": "zh-CN", "url": app.url}])
    app.sql("UPDATE agent_sessions SET updated_at = ?", (app.stamp(days_ago(1)),))
    page.reload()
    expect(page.locator(".session-group-title")).to_have_text(["昨天"])
    expect(items.first.get_by_test_id("approval-badge")).to_have_text("待审批")
    expect(page.get_by_label("搜索对话")).to_be_visible()

    # 7. many chats: the newest fifty come first (one request), the next fifty as the end scrolls in
    uid = app.sql("SELECT id FROM users WHERE username = 'root'")[0][0]
    rows = [(f"as_old_{i}", uid, f"Old chat {i}", app.stamp(days_ago(40 + i))) for i in range(1, 121)]
    app.sql("INSERT INTO agent_sessions (id, user_id, kind, title, status, title_source, created_at, updated_at) "
            "VALUES " + ", ".join(["(?, ?, 'llm', ?, 'idle', 'user', ?, ?)"] * len(rows)),
            tuple(v for row_id, user, title, when in rows for v in (row_id, user, title, when, when)))
    lists: list[str] = []
    page.on("request", lambda r: lists.append(r.url) if "/api/agent-sessions?" in r.url else None)
    page.reload()
    expect(items).to_have_count(50)
    expect(items.nth(1).locator(".session-title")).to_have_text("Old chat 1")
    assert len(lists) == 1, lists
    page.get_by_test_id("more-sessions").scroll_into_view_if_needed()
    expect(items).to_have_count(100)
    expect(items.nth(99).locator(".session-title")).to_have_text("Old chat 99")
    page.get_by_test_id("more-sessions").scroll_into_view_if_needed()
    expect(items).to_have_count(121)
    expect(page.get_by_test_id("more-sessions")).to_have_count(0)


def test_a_chat_whose_agent_was_deleted_can_be_read_but_not_continued(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    page.goto("/chat")
    fake_model.push(text("Brew at 93 degrees."))
    send(page, "How hot should the water be?")
    expect(page.get_by_test_id("regenerate")).to_have_count(1)
    api(page, "DELETE", f"/api/admin/agents/{agent['id']}")
    page.reload()
    expect(page.locator("#chat-agent")).to_have_text("Deleted agent")
    expect(page.locator("#session-list .session-item .session-sub").first).to_have_text("Deleted agent")
    expect(page.locator(".message.assistant")).to_contain_text("Brew at 93 degrees.")
    expect(page.get_by_label("Message")).to_be_disabled()
    expect(page.get_by_label("Message")).to_have_attribute("placeholder", re.compile("was deleted"))
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    expect(page.get_by_test_id("regenerate")).to_have_count(0)
    expect(page.locator(".msg-actions [data-action='edit']")).to_have_count(0)
    expect(page.get_by_role("button", name="Copy").first).to_be_visible()  # what it said can still be taken


def test_the_list_shows_only_the_chats_from_other_clients_when_asked(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    token = api(page, "POST", "/api/auth/tokens", {"name": "client"})["token"]
    made = httpx.post(f"{app.url}/v1/chat/completions", headers={"Authorization": f"Bearer {token}"},
                      json={"model": "helper", "messages": [{"role": "user", "content": "from my script"}]})
    assert made.status_code == 200, made.text
    page.goto("/chat")
    send(page, "typed in the page")
    items = page.locator("#session-list .session-item .session-title")
    expect(items).to_have_text(["typed in the page", "from my script"])
    page.get_by_label("Only chats from other clients (API)").check()
    expect(items).to_have_text(["from my script"])
    page.locator("#session-search").fill("typed")
    expect(page.locator("#session-list .no-results")).to_be_visible()
    page.locator("#session-search").fill("")
    page.get_by_label("Only chats from other clients (API)").uncheck()
    expect(items).to_have_text(["typed in the page", "from my script"])
