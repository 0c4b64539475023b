"""Issue 33 point 4 in a real browser: a tool's approvers answer its calls from the Approvals inbox
(``/approvals``, with the top bar's count), and the requester's turn goes on."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import HeldRequests, add_fake_model, api, csrf_headers, sign_in
from tests.e2e.test_accessibility import violations
from tests.e2e.test_phone import PHONES, overflow
from tests.fakes.openai_server import FakeModel, FakeModelServer, call, text
from tests.support import LiveApp

pytestmark = pytest.mark.e2e


def setup_approvers(page: Page, server: FakeModelServer) -> dict[str, Any]:
    """An agent with a calculator that needs approval, alice who chats, and bob in the approvers' group
    (set on the tool through the API here; the tool form's own test sets it through the form)."""
    add_fake_model(page, server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "math", "name": "Math"})
    tool = api(page, "POST", "/api/agent-tools",
               {"slug": "calc", "name": "Calc", "type": "calculator", "needsApproval": True})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tool["id"]}])
    users = {name: api(page, "POST", "/api/admin/users", {"username": name, "password": "password123",
                                                          "role": "user"}) for name in ("alice", "bob")}
    group = api(page, "POST", "/api/admin/groups", {"name": "Reviewers"})
    api(page, "PUT", f"/api/admin/groups/{group['id']}/members", [users["bob"]["id"]])
    return {"agent": agent, "tool": tool, "group": group}


def test_an_approver_answers_from_the_inbox(
    admin_page: Page, new_page: Callable[..., Page], app: LiveApp, fake_model_server: FakeModelServer,
    fake_model: FakeModel,
) -> None:
    setup = setup_approvers(admin_page, fake_model_server)
    api(admin_page, "PUT", f"/api/agent-tools/{setup['tool']['id']}", {"approverGroupIds": [setup["group"]["id"]]})
    alice = new_page()
    sign_in(alice, "alice", "password123")
    expect(alice).to_have_url(f"{app.url}/chat")
    expect(alice.get_by_test_id("nav-approvals")).to_have_count(0)  # no approver: no entry
    fake_model.push(call("calc", {"expression": "6*7"}), text("The answer is 42."))
    paused = alice.request.post("/api/agents/math/chat", data={"message": "What is 6*7?"},
                                headers=csrf_headers(alice))
    assert paused.ok and "tool-approval-request" in paused.text()
    session = paused.headers["x-session-id"]

    bob = new_page()
    sign_in(bob, "bob", "password123")
    entry = bob.locator(".mainnav").get_by_test_id("nav-approvals")
    expect(entry.get_by_test_id("approvals-count")).to_have_text("1")
    entry.click()
    expect(bob).to_have_url(f"{app.url}/approvals")
    item = bob.get_by_test_id("approval-item")
    expect(item).to_have_count(1)
    expect(item.locator(".tool-name")).to_have_text("Calc")
    expect(item).to_contain_text("asked by alice")
    expect(item.get_by_test_id("approval-agent")).to_have_text("Math")
    expect(item.get_by_test_id("approval-question")).to_have_text("What is 6*7?")
    expect(item.get_by_test_id("approval-input")).to_contain_text('"expression": "6*7"')
    bob.screenshot(path="/tmp/shots/approvals-inbox.png", full_page=True)
    # The inbox with a call in it, which the accessibility and phone lists' empty inbox lacks: axe finds
    # nothing serious (in a context of its own: axe is a script the page's policy would refuse), and a
    # phone needs no sideways scrolling.
    checker = new_page(bypass_csp=True)
    sign_in(checker, "bob", "password123")
    expect(checker).to_have_url(f"{app.url}/chat")
    checker.goto("/approvals")
    expect(checker.get_by_test_id("approval-item")).to_have_count(1)
    for theme in ("light", "dark"):
        checker.evaluate("theme => { document.documentElement.dataset.theme = theme; }", theme)
        assert violations(checker) == [], theme
    for size in PHONES:
        checker.set_viewport_size(size)
        assert overflow(checker) <= 0, size
    expect(checker.get_by_test_id("menu-approvals-count")).to_contain_text("1")  # the entry is in that menu
    checker.screenshot(path="/tmp/shots/phone-approvals.png", full_page=True)
    item.get_by_label("Reason for the answer to alice's “Calc”").fill("fine by me")
    item.get_by_label("Reason for the answer to alice's “Calc”").press("Enter")  # Enter alone approves nothing
    expect(item).to_have_count(1)
    item.get_by_role("button", name="Approve alice's “Calc”").click()

    expect(bob.get_by_test_id("approvals-empty")).to_be_visible()
    expect(bob.get_by_test_id("approvals-status")).to_have_text("Approved “Calc”.")
    expect(entry.get_by_test_id("approvals-count")).to_have_count(0)
    expect(bob.get_by_test_id("menu-approvals-count")).to_have_count(0)
    expect(bob.get_by_role("heading", name="Approvals")).to_be_focused()

    def reply() -> Any:
        return api(alice, "GET", f"/api/agent-sessions/{session}")["messages"][-1]

    answered = reply()
    for _ in range(100):  # the turn goes on in the background: wait for its end, not a fixed time
        if answered["status"] == "complete":
            break
        alice.wait_for_timeout(100)
        answered = reply()
    assert answered["status"] == "complete" and "42" in answered["content"]
    tool_part = next(p for p in answered["parts"] if p.get("toolCallId"))
    assert tool_part["approval"] == {"id": tool_part["approval"]["id"], "approved": True, "reason": "fine by me",
                                     "decidedBy": "bob"}


def set_approvers_in_the_form(page: Page, tool: str, group: str) -> None:
    """Admin → Tools: tick ``group`` as the approvers of ``tool`` (the choice shows once calls need
    approval) and save."""
    page.goto("/admin/agent-tools")
    row = page.locator(f"#tools-table tr[data-slug='{tool}']")
    row.get_by_role("button", name="Edit").click()
    dialog = page.locator("#tool-dialog")
    approvers = dialog.get_by_role("group", name="Approvers")
    expect(approvers).to_be_visible()
    dialog.get_by_label("Calls need approval").uncheck()
    expect(approvers).to_be_hidden()  # no approval, no approvers to name
    dialog.get_by_label("Calls need approval").check()
    approvers.get_by_label(group).check()
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    expect(row.get_by_test_id("approvers")).to_have_text(f"by {group}")


def test_the_tool_form_names_approvers_and_shows_them_back(
    admin_page: Page, fake_model_server: FakeModelServer
) -> None:
    page = admin_page
    setup = setup_approvers(page, fake_model_server)
    api(page, "POST", "/api/admin/groups", {"name": "Auditors"})
    set_approvers_in_the_form(page, "calc", "Reviewers")
    assert api(page, "GET", f"/api/agent-tools/{setup['tool']['id']}")["approverGroupIds"] == [setup["group"]["id"]]
    page.reload()
    page.locator("#tools-table tr[data-slug='calc']").get_by_role("button", name="Edit").click()
    approvers = page.locator("#tool-dialog").get_by_role("group", name="Approvers")
    expect(approvers.get_by_label("Reviewers")).to_be_checked()
    expect(approvers.get_by_label("Auditors")).not_to_be_checked()
    page.screenshot(path="/tmp/shots/tool-approvers.png")
    # Unticking "calls need approval" hides the choice but keeps it: an agent may still ask for approval.
    page.locator("#tool-dialog").get_by_label("Calls need approval").uncheck()
    page.locator("#tool-dialog").get_by_role("button", name="Save").click()
    expect(page.locator("#tool-dialog")).to_be_hidden()
    tool = api(page, "GET", f"/api/agent-tools/{setup['tool']['id']}")
    assert (tool["needsApproval"], tool["approverGroupIds"]) == (False, [setup["group"]["id"]])


def test_the_requester_waits_for_the_approvers_and_the_reply_goes_on(
    admin_page: Page, new_page: Callable[..., Page], app: LiveApp, fake_model_server: FakeModelServer,
    fake_model: FakeModel,
) -> None:
    """The whole way: the admin names the approvers in the tool form, alice's turn pauses on a call they
    decide and her page says who is to approve (no buttons of hers), bob approves it from his inbox, and
    alice's page, left open, goes on with the reply and says who approved."""
    set_approvers_in_the_form(admin_page, "calc", setup_approvers(admin_page, fake_model_server)["group"]["name"])
    alice = new_page()
    sign_in(alice, "alice", "password123")
    expect(alice).to_have_url(f"{app.url}/chat")
    # The reply's words come later than the page's next question: it finds the reply being written and
    # follows its stream (a reply already ended is simply shown).
    fake_model.push(call("calc", {"expression": "6*7"}), text("The answer is **42**.", first_delay=4))
    # Until the page has read the session after the pause, it knows the approvers from the tool alone:
    # the card says who is to approve from the start, never offering buttons the server would refuse.
    reading = HeldRequests(alice, "**/api/agent-sessions/as_*")
    alice.get_by_label("Message").fill("What is 6*7?")
    alice.get_by_role("button", name="Send").click()
    card = alice.locator(".tool-card[data-tool='calc']")
    expect(card.get_by_test_id("waiting-for")).to_have_text("Waiting for approval by Reviewers")
    expect(card.get_by_role("button")).to_have_count(0)  # not hers to answer
    reading.release()
    expect(card.get_by_test_id("waiting-for")).to_have_text("Waiting for approval by Reviewers")
    expect(card.get_by_test_id("tool-state")).to_have_text("Waiting for approval")
    alice.screenshot(path="/tmp/shots/chat-waiting-for-approvers.png")
    polled: list[str] = []
    alice.on("request", lambda r: polled.append(r.url) if r.method == "GET" and "/api/agent-sessions/as_" in r.url
             else None)

    bob = new_page()
    sign_in(bob, "bob", "password123")
    expect(bob).to_have_url(f"{app.url}/chat")
    bob.goto("/approvals")
    item = bob.get_by_test_id("approval-item")
    expect(item).to_contain_text("asked by alice")
    expect(item.get_by_test_id("approval-question")).to_have_text("What is 6*7?")
    item.get_by_role("button", name="Approve alice's “Calc”").click()
    expect(bob.get_by_test_id("approvals-empty")).to_be_visible()

    # alice did nothing: her page asked until the answer came, then followed the reply to its end.
    expect(card.get_by_test_id("tool-state")).to_have_text("Done", timeout=10_000)
    expect(card.get_by_test_id("decided-by")).to_have_text("Approved by bob")
    expect(alice.locator(".message.assistant .md strong")).to_have_text("42", timeout=10_000)
    expect(card.get_by_test_id("waiting-for")).to_have_count(0)
    expect(alice.get_by_test_id("approval-badge")).to_have_count(0)  # the chat list's "needs approval" too
    assert polled, "the page never asked whether the approvers answered"
    alice.screenshot(path="/tmp/shots/chat-approved-by.png")
    asked = len(polled)
    alice.wait_for_timeout(3500)  # longer than one interval: with nothing waiting, the page asks no more
    assert len(polled) == asked, polled[asked:]
