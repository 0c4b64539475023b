"""Issue 6 point 7 in a real browser: when the agent hands a sub-task to another agent, a side panel
opens, fills with the called agent's reply while the caller's reply is still going, shows done, closes on
request; two calls in one reply get two stacked panels."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step
from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, call, text

pytestmark = pytest.mark.e2e


def setup_pair(page: Page, server: FakeModelServer) -> dict[str, Any]:
    add_fake_model(page, server)
    caller = api(page, "POST", "/api/admin/agents", {"slug": "general", "name": "General",
                                                     "systemPrompt": CALLER_PROMPT})
    api(page, "POST", "/api/admin/agents", {"slug": "coder", "name": "Coder", "systemPrompt": CALLEE_PROMPT,
                                            "a2aCallable": True})
    tool = api(page, "POST", "/api/agent-tools", {"slug": "ask-agent", "name": "Ask agent", "type": "agent-invoke"})
    api(page, "PUT", f"/api/admin/agents/{caller['id']}/tools", [{"toolId": tool["id"]}])
    return caller


def send(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def test_panel_opens_and_fills_while_the_reply_goes_on(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_pair(page, fake_model_server)
    words = " ".join(f"word{i}" for i in range(40))
    fake_model.push(
        caller_step(call("ask-agent", {"agentSlug": "coder", "input": "write it"})),
        callee_step(Step(text=f"**Bold** start {words} end.", delay=0.08)),
        caller_step(text("The coder has answered.")),
    )
    page.goto("/chat?agent=general")
    send(page, "ask the coder")

    panel = page.locator("#chat-side-panel .a2a-panel")
    expect(panel).to_have_count(1)
    expect(page.locator("#chat-side-panel")).to_be_visible()
    expect(panel.locator(".a2a-panel-name")).to_have_text("Coder")
    # Filling while the caller's reply is still streaming (its Stop button is shown, Send is not).
    expect(panel.locator(".a2a-panel-body")).to_contain_text("word3")
    expect(panel).to_have_attribute("data-state", "generating")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(page.locator(".message.assistant").last).not_to_contain_text("The coder has answered.")
    page.screenshot(path="/tmp/agentloft-a2a-panel-generating.png")

    expect(panel).to_have_attribute("data-state", "done", timeout=20_000)
    expect(panel.locator(".a2a-panel-body strong")).to_have_text("Bold")  # rendered as markdown
    expect(panel.locator(".a2a-panel-body")).to_contain_text("word39 end.")
    expect(page.locator(".message.assistant").last).to_contain_text("The coder has answered.")
    page.screenshot(path="/tmp/agentloft-a2a-panel-done.png")

    panel.get_by_role("button", name="Close").click()
    expect(panel).to_have_count(0)
    expect(page.locator("#chat-side-panel")).to_be_hidden()


def test_two_calls_stack_and_a_failure_shows(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_pair(page, fake_model_server)
    fake_model.push(
        caller_step(call("ask-agent", {"agentSlug": "coder", "input": "first"})),
        callee_step(text("first answer")),
        caller_step(call("ask-agent", {"agentSlug": "coder", "input": "second"})),
        callee_step(Step(error_status=400, error_message="coder model broke")),
        caller_step(call("ask-agent", {"agentSlug": "nobody", "input": "third"})),  # never starts
        caller_step(text("Both calls are done.")),
    )
    page.goto("/chat?agent=general")
    send(page, "ask twice")
    panels = page.locator("#chat-side-panel .a2a-panel")
    expect(page.locator(".message.assistant").last).to_contain_text("Both calls are done.")
    # the call to a missing agent opened no panel (seed 003): its failure is on its tool card alone
    expect(panels).to_have_count(2)
    expect(page.locator(".message.assistant").last).to_contain_text("'nobody' is not available over A2A")
    expect(panels.nth(0).locator(".a2a-panel-header svg.a2a-panel-icon")).to_be_visible()
    expect(panels.nth(0)).to_have_attribute("data-state", "done")
    expect(panels.nth(0).locator(".a2a-panel-body")).to_contain_text("first answer")
    expect(panels.nth(1)).to_have_attribute("data-state", "error")
    expect(panels.nth(1).locator(".a2a-panel-error")).to_contain_text("coder model broke")
    expect(page.locator(".message.assistant").last).to_contain_text("Both calls are done.")
    page.screenshot(path="/tmp/agentloft-a2a-panels-stacked.png")
    panels.nth(0).get_by_role("button", name="Close").click()
    expect(panels).to_have_count(1)
    expect(page.locator("#chat-side-panel")).to_be_visible()


def test_panel_waits_says_when_the_connection_is_lost_and_is_a_sheet_on_a_phone(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """Seed 003's states: the panel opens when the call starts and waits ("等待回复…" with a spinner)
    until the called agent writes; a dropped connection says so and can follow again."""
    page = admin_page
    setup_pair(page, fake_model_server)
    page.context.add_cookies([{"name": "agentloft_lang", "value": "zh-CN", "url": page.url}])
    page.set_viewport_size({"width": 390, "height": 844})
    fake_model.push(
        caller_step(call("ask-agent", {"agentSlug": "coder", "input": "write it"})),
        callee_step(Step(text="The **answer** from the coder.", first_delay=3, delay=0.05)),
        caller_step(text("Done.")),
    )
    cut = {"on": True}

    def maybe_cut(route: Any) -> None:
        if cut["on"]:
            route.abort("connectionreset")
        else:
            route.continue_()

    page.route("**/api/agents/a2a/stream*", maybe_cut)
    page.goto("/chat?agent=general")
    page.get_by_label("消息").fill("ask the coder")
    page.get_by_role("button", name="发送").click()

    panel = page.locator("#chat-side-panel .a2a-panel")
    # The first subscription is cut: the panel says so and offers to follow again.
    expect(panel).to_have_attribute("data-state", "lost")
    expect(panel.locator(".a2a-panel-status")).to_have_text("连接中断")
    expect(panel.locator(".a2a-panel-error")).to_contain_text("重新连接")
    cut["on"] = False
    panel.get_by_role("button", name="重新连接").click()
    # Following again while the called agent has not written yet: waiting, with a spinner.
    expect(panel.locator(".a2a-panel-waiting")).to_have_text("等待回复…")
    expect(panel.locator(".a2a-spinner")).to_be_visible()
    box = page.locator("#chat-side-panel").bounding_box()
    assert box and box["width"] == 390 and abs(box["y"] + box["height"] - 844) < 1  # a sheet at the bottom
    page.screenshot(path="/tmp/shots/a2a-sheet-waiting.png")
    expect(panel).to_have_attribute("data-state", "done", timeout=15_000)
    expect(panel.locator(".a2a-panel-waiting")).to_be_hidden()
    expect(panel.locator(".a2a-panel-body strong")).to_have_text("answer")
    expect(page.locator(".message.assistant").last).to_contain_text("Done.")


def test_the_panel_stream_says_it_replays(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_pair(page, fake_model_server)
    fake_model.push(
        caller_step(call("ask-agent", {"agentSlug": "coder", "input": "x"})),
        callee_step(Step(text="slow answer", first_delay=0.5)),
        caller_step(text("ok")),
    )
    with page.expect_response(lambda r: "/api/agents/a2a/stream" in r.url) as got:
        page.goto("/chat?agent=general")
        page.get_by_label("Message").fill("go")
        page.get_by_role("button", name="Send").click()
    assert got.value.headers.get("x-stream-resume") == "true"


def test_the_called_agents_approval_is_asked_in_the_panel(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """The called agent's tool needs approval: the panel shows the card with the call's arguments;
    approving resumes the called agent in the panel, then the calling agent's reply goes on in the chat."""
    page = admin_page
    setup_pair(page, fake_model_server)
    coder = next(a for a in api(page, "GET", "/api/admin/agents")["items"] if a["slug"] == "coder")
    calc = api(page, "POST", "/api/agent-tools", {"slug": "calc", "name": "calc", "type": "calculator"})
    api(page, "PUT", f"/api/admin/agents/{coder['id']}/tools", [{"toolId": calc["id"], "needsApproval": True}])
    fake_model.push(
        caller_step(call("ask-agent", {"agentSlug": "coder", "input": "add two and two"})),
        callee_step(call("calc", {"expression": "2+2"}, id="calc1")),
    )
    page.goto("/chat?agent=general")
    send(page, "ask the coder to add")

    panel = page.locator("#chat-side-panel .a2a-panel")
    card = panel.locator(".a2a-approval")
    expect(card).to_contain_text("“calc” needs your approval")
    expect(card.locator(".a2a-approval-input")).to_contain_text("2+2")
    expect(panel).to_have_attribute("data-state", "approval")
    page.screenshot(path="/tmp/agentloft-a2a-panel-approval.png")
    # After a reload the waiting reply opens its panel again, with the card.
    page.reload()
    expect(card).to_contain_text("“calc” needs your approval")
    expect(panel).to_have_attribute("data-state", "approval")

    fake_model.push(callee_step(text("Two and two make 4.")), caller_step(text("The coder says it is 4.")))
    card.get_by_role("button", name="Approve").click()
    expect(card).to_have_count(0)
    expect(panel.locator(".a2a-panel-body")).to_contain_text("Two and two make 4.", timeout=20_000)
    expect(page.locator(".message.assistant").last).to_contain_text("The coder says it is 4.", timeout=20_000)
