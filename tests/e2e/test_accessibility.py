"""Issue 14 point 9 in a real browser: axe (pinned, injected by the test) finds no serious or critical
violation on any page, in the light and the dark theme; the keyboard reaches the content by a skip
link, Escape closes menus, and focus comes back to the message box after Stop."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, call, text
from tests.support import LiveApp

pytestmark = pytest.mark.e2e

AXE = Path(__file__).parent / "vendor" / "axe-core-4.14.1" / "axe.min.js"
AXE_SHA256 = "29348999450cdf2849a8e70b7912fc2da85a849da39c0d0d5394f51d4a9ed95c"
SERIOUS = ("serious", "critical")


def violations(page: Page) -> list[dict[str, Any]]:
    """axe's serious and critical findings on the page as it is now."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document, {resultTypes: ['violations']})).violations")
    return [{"id": v["id"], "impact": v["impact"], "nodes": [n["target"] for n in v["nodes"]][:3]}
            for v in found if v["impact"] in SERIOUS]


def test_the_pinned_axe_is_the_one_we_think() -> None:
    assert hashlib.sha256(AXE.read_bytes()).hexdigest() == AXE_SHA256


def test_no_serious_violation_on_any_page_in_either_theme(
    new_page: Callable[..., Page], app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel,
) -> None:
    # axe is injected as a script of the page's own, which the content security policy forbids: these
    # two pages set it aside (every other browser test runs under it).
    page = new_page(bypass_csp=True)
    page.goto("/login")
    api(page, "POST", "/api/auth/signup", {"username": "root", "password": "password123"})
    add_fake_model(page, fake_model_server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    notes = api(page, "POST", "/api/agent-tools", {"slug": "notes", "name": "Notes", "type": "document"})
    calc = api(page, "POST", "/api/agent-tools", {"slug": "calc", "name": "Calc", "type": "calculator",
                                                  "needsApproval": True})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": notes["id"]}, {"toolId": calc["id"]}])
    api(page, "POST", "/api/admin/users", {"username": "alice", "password": "password123", "role": "user"})
    api(page, "POST", "/api/auth/tokens", {"name": "script"})
    # A conversation with most of what a chat shows: markdown, code, math, a tool card with a document
    # link, a failed reply with its hint, and a call waiting for approval.
    fake_model.push(call("notes", {"action": "create", "title": "Plan", "content": "# Plan\n\n- one"}),
                    text("Saved. `code` and\n\n```python\nprint(1)\n```\n\n$$x^2$$\n\n| a | b |\n|---|---|\n| 1 | 2 |"),
                    Step(error_status=429, error_message="slow down"), call("calc", {"expression": "1+1"}))
    page.goto("/chat")
    for message in ("save a plan", "again", "add"):
        page.get_by_label("Message").fill(message)
        page.get_by_role("button", name="Send").click()
        expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    expect(page.locator(".tool-card[data-tool='calc'] .approval")).to_be_visible()
    session = page.url.rsplit("/", 1)[1]
    doc = api(page, "GET", "/api/agent-documents?type=memory")["items"][0]["id"]
    pages = ["/chat", f"/chat/{session}", "/agent-documents", f"/agent-documents/{doc}", "/tokens", "/setup",
             "/approvals", "/admin/agents", "/admin/models", "/admin/agent-tools", "/admin/mcp-servers", "/admin/users",
             "/admin/groups", "/admin/settings", "/admin/audit", "/nowhere"]
    stranger = new_page(bypass_csp=True)

    found: dict[str, list[dict[str, Any]]] = {}
    for who, path in [(page, p) for p in pages] + [(stranger, "/login"), (stranger, "/signup")]:
        who.goto(path)
        who.wait_for_load_state("networkidle")
        for theme in ("light", "dark"):  # switched in place, as the theme button does: one load per page
            who.evaluate("theme => { document.documentElement.dataset.theme = theme; }", theme)
            if bad := violations(who):
                found[f"{theme} {path}"] = bad
    page.context.add_cookies([{"name": "agentloft_theme", "value": "dark", "url": app.url}])
    page.goto(f"/chat/{session}")  # the chat with its menus open and a message being edited
    fake_model.push(text("Not computed."))  # a message can be edited once the call is answered
    page.locator(".tool-card[data-tool='calc']").get_by_role("button", name="Reject").click()
    expect(page.locator(".message.assistant").last).to_contain_text("Not computed.")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    page.get_by_test_id("user-menu").click()
    # The last message: the open menu covers the top of the conversation.
    page.locator(".message.user").last.hover()
    page.locator(".message.user").last.get_by_role("button", name="Edit").click()
    if bad := violations(page):
        found["dark chat, menu open, editing"] = bad
    assert not found, found


def test_keyboard_skip_link_escape_and_focus_after_stop(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    page.goto("/agent-documents")
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to the content")
    expect(skip).to_be_focused()
    expect(skip).to_be_in_viewport()
    page.keyboard.press("Enter")
    expect(page.locator("main#main")).to_be_focused()

    menu = page.locator("details.lang-menu")
    page.get_by_test_id("lang-menu").click()
    expect(menu).to_have_attribute("open", "")
    page.keyboard.press("Escape")
    expect(menu).not_to_have_attribute("open", "")
    expect(page.get_by_test_id("lang-menu")).to_be_focused()

    page.goto("/chat")
    fake_model.push(Step(text=" ".join(["word"] * 200), delay=0.05))
    page.get_by_label("Message").fill("talk a lot")
    page.keyboard.press("Enter")
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_visible()
    reply = page.locator(".message.assistant")
    expect(reply).to_have_attribute("aria-busy", "true")  # read out once whole, not word by word
    stop.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_test_id("message-status")).to_have_text("Stopped")
    expect(reply).to_have_attribute("aria-busy", "false")
    expect(page.get_by_label("Message")).to_be_focused()


def test_the_empty_chat_stays_light_and_every_static_url_is_versioned(
    admin_page: Page, fake_model_server: FakeModelServer
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    finished: list[Any] = []
    page.on("requestfinished", lambda request: finished.append(request))
    page.goto("/chat")
    page.wait_for_load_state("networkidle")
    statics = [r.url for r in finished if "/static/" in r.url]
    assert statics and all("/static/v-" in url for url in statics), statics  # modules imported by modules too
    size = sum(r.sizes()["responseBodySize"] for r in finished)
    print(f"empty chat: {len(finished)} requests, {size / 1024:.1f} KB on the wire")
    # 24: the 20 of the page's last weighing (docs/benchmarks.md), the two modules of files and knowledge
    # (the composer's attachments, a reply's sources), and the budget note with its read of what is left
    # (``chat/budget-note.js``, ``GET /api/usage/budgets``), which an empty chat already needs
    assert len(finished) <= 24 and size <= 76 * 1024, (len(finished), size)
