"""Issue 4 point 7 in a real browser: a reply streams in with markdown; a tool call that needs approval
shows a card with Approve/Reject and the run continues after the answer; a page reloaded mid-reply picks
the stream up; Stop ends a reply."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, ToolCall, call, text
from tests.support import LiveApp

pytestmark = pytest.mark.e2e


def setup_agent(page: Page, server: FakeModelServer, *, approval: bool = True) -> dict[str, Any]:
    add_fake_model(page, server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "math", "name": "Math", "description": "Counts"})
    tool = api(page, "POST", "/api/agent-tools",
               {"slug": "calc", "name": "Calc", "type": "calculator", "needsApproval": approval})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tool["id"]}])
    return agent


def saved_reply(app: LiveApp, session_id: str, done: Callable[[tuple[Any, ...]], bool]) -> tuple[Any, ...]:
    """The stored assistant reply once ``done`` says so: the stream ends a moment before the row is saved."""
    deadline = time.monotonic() + 10
    while True:
        rows = app.sql("SELECT status, content FROM agent_messages WHERE session_id=? AND role='assistant'",
                       (session_id,))
        if (rows and done(rows[0])) or time.monotonic() > deadline:
            return rows[0]
        time.sleep(0.1)


def send(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()


def test_approve_a_tool_call_and_the_answer_streams_in(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_agent(page, fake_model_server)
    fake_model.push(call("calc", {"expression": "6*7"}), text("The answer is **42**.", delay=0.02))
    page.goto("/chat")
    expect(page.get_by_label("Agent")).to_have_value("math")
    send(page, "What is 6*7?")

    card = page.locator(".tool-card[data-tool='calc']")
    expect(card.get_by_test_id("tool-state")).to_have_text("Waiting for approval")
    expect(card.locator(".tool-name")).to_have_text("Calc")  # the tool's name, not its slug "calc"
    expect(card).to_contain_text("6*7")
    expect(page).to_have_url(re.compile(r"/chat/as_"))
    expect(page.get_by_label("Message")).to_be_focused()  # Send hid under the pointer: focus is not lost
    page.screenshot(path="/tmp/agentloft-chat-approval.png")
    page.set_viewport_size({"width": 360, "height": 740})  # on a phone the buttons wrap together
    boxes = [card.get_by_role("button", name=f"{word} “Calc”", exact=True).bounding_box()
             for word in ("Approve", "Reject")]
    assert boxes[0] and boxes[1] and abs(boxes[0]["y"] - boxes[1]["y"]) < 2, boxes
    page.screenshot(path="/tmp/shots/phone-approval.png")
    page.set_viewport_size({"width": 1280, "height": 860})

    # Answered at once, before the server has finished storing the pause: the page copes. From the
    # keyboard, the focus then goes on in the message box (the pressed button is gone).
    card.get_by_role("button", name="Approve “Calc”", exact=True).focus()  # which call it answers
    page.keyboard.press("Enter")
    expect(page.get_by_label("Message")).to_be_focused()
    expect(card.get_by_test_id("tool-state")).to_have_text("Done")
    expect(card.get_by_test_id("tool-output")).to_contain_text("42")
    answer = page.locator(".message.assistant .md").last
    expect(answer.locator("strong")).to_have_text("42")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(page.locator("#session-list")).to_contain_text("What is 6*7?")
    page.screenshot(path="/tmp/agentloft-chat.png")

    # Reloaded, the conversation renders from what was saved.
    page.reload()
    expect(page.locator(".message.user .bubble")).to_have_text("What is 6*7?")
    expect(page.locator(".tool-card[data-tool='calc']").get_by_test_id("tool-state")).to_have_text("Done")
    expect(page.locator(".message.assistant .md strong")).to_have_text("42")


def test_a_new_chat_shows_the_agents_description_and_starter_prompts(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    agent = setup_agent(page, fake_model_server, approval=False)
    page.goto("/admin/agents")
    page.locator("tr[data-slug='math']").get_by_role("button", name="Edit").click()
    page.get_by_label("Starter prompts").fill("What is 2+2?\n\n  Count to three  ")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#agent-dialog")).to_be_hidden()
    assert api(page, "GET", f"/api/admin/agents/{agent['id']}")["starterPrompts"] == ["What is 2+2?",
                                                                                      "Count to three"]
    page.goto("/chat?agent=math")
    expect(page.get_by_test_id("agent-description")).to_have_text("Counts")
    prompts = page.get_by_test_id("starter-prompts").get_by_role("button")
    expect(prompts).to_have_text(["What is 2+2?", "Count to three"])
    page.get_by_label("Agent").select_option("")  # the plain model has neither
    expect(page.get_by_test_id("agent-description")).to_be_hidden()
    page.get_by_label("Agent").select_option("math")
    page.screenshot(path="/tmp/shots/chat-new-intro.png")
    prompts.nth(1).click()  # pressed, it is sent
    expect(page.locator(".message.user .bubble")).to_have_text("Count to three")
    expect(page.locator(".message.assistant .md")).to_have_text("echo: Count to three")
    expect(page.get_by_test_id("agent-description")).to_be_hidden()


def test_reload_while_an_approved_call_goes_on_shows_each_part_once(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """A reply resumed after an approval: what came before the approval is the saved message's, the rest
    comes with the replay, and the checkpoints of the resumed run add nothing twice."""
    page = admin_page
    setup_agent(page, fake_model_server)
    words = " ".join(f"word{i}" for i in range(40))
    fake_model.push(Step(text="Let me compute.", tool_calls=[ToolCall("calc", {"expression": "6*7"})]),
                    text(words + " END", delay=0.1))
    page.goto("/chat")
    send(page, "What is 6*7?")
    card = page.locator(".tool-card[data-tool='calc']")
    card.get_by_role("button", name="Approve “Calc”", exact=True).click()
    expect(page).to_have_url(re.compile(r"/chat/as_"))
    assert "word10" in saved_reply(app, page.url.rsplit("/", 1)[1], lambda row: "word10" in row[1])[1]
    page.reload()
    answer = page.locator(".message.assistant").last
    expect(answer).to_contain_text("word39 END", timeout=15_000)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert answer.inner_text().count("word10 ") == 1 and answer.inner_text().count("Let me compute.") == 1
    expect(answer.locator(".tool-card[data-tool='calc']")).to_have_count(1)
    expect(card.get_by_test_id("tool-state")).to_have_text("Done")


def test_reject_a_tool_call_with_a_reason(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_agent(page, fake_model_server)
    fake_model.push(call("calc", {"expression": "2**10"}), text("Fine, I will not compute it."))
    page.goto("/chat")
    send(page, "Compute 2**10")
    card = page.locator(".tool-card[data-tool='calc']")
    expect(card.get_by_test_id("tool-state")).to_have_text("Waiting for approval")
    page.reload()  # the message has its saved id, so it can be edited, but not while the call waits
    edit = page.locator(".message.user").first.locator(".msg-actions button", has_text="Edit")
    expect(edit).to_have_count(1)
    expect(edit).to_be_hidden()
    card.get_by_label("Reason for rejecting “Calc”", exact=True).fill("not now")
    card.get_by_label("Reason for rejecting “Calc”").press("Enter")  # a reason says why not: Enter rejects
    expect(card.get_by_test_id("tool-state")).to_have_text("Rejected")
    expect(page.get_by_label("Message")).to_be_focused()
    expect(page.locator(".message.assistant .md").last).to_contain_text("Fine, I will not compute it.")
    expect(edit).to_be_visible()
    sent = fake_model.requests[-1]["messages"]
    assert any("not now" in str(m.get("content")) for m in sent), fake_model.requests


def test_reload_mid_reply_resumes_the_stream(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_agent(page, fake_model_server, approval=False)
    words = " ".join(f"word{i}" for i in range(40))
    fake_model.push(text(words + " END", delay=0.1))
    page.goto("/chat")
    send(page, "Talk slowly")
    answer = page.locator(".message.assistant .md").last
    expect(answer).to_contain_text("word3")
    expect(page).to_have_url(re.compile(r"/chat/as_"))
    expect(page.locator("#session-list")).to_contain_text("Talk slowly")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()  # listed while its reply is written
    checkpoint = saved_reply(app, page.url.rsplit("/", 1)[1], lambda row: "word10" in row[1])
    assert "word10" in checkpoint[1], "a checkpoint was saved before the reload"
    page.reload()
    # The replay brings back what streamed before the reload, once, then it follows live to the end.
    answer = page.locator(".message.assistant .md").last
    expect(answer).to_contain_text("word1 word2")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(answer).to_contain_text("word39 END", timeout=15_000)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    assert page.locator(".message.assistant").last.inner_text().count("word10 ") == 1  # every text part
    status, content = saved_reply(app, page.url.rsplit("/", 1)[1], lambda row: row[0] != "streaming")
    assert status == "complete" and content.endswith("END")

    # The network goes away mid-reply: the page says so at once (a dead connection may hang for minutes)
    # and follows the reply again, without a reload, when the network is back.
    fake_model.push(text(words + " AGAIN", delay=0.1))
    send(page, "Once more")
    expect(page.locator(".message.assistant")).to_have_count(2)
    answer = page.locator(".message.assistant .md").last
    expect(answer).to_contain_text("word3")
    page.context.set_offline(True)
    expect(page.locator(".chat-error")).to_contain_text("You are offline.")
    cut = page.locator(".message.assistant").last
    expect(cut.get_by_test_id("message-error")).to_contain_text("Press Reconnect")
    expect(cut.get_by_test_id("retry")).to_have_count(0)  # starting over would be refused: it still runs
    page.get_by_label("Message").fill("while offline")
    page.get_by_label("Message").press("Enter")
    expect(page.locator(".chat-error")).to_have_text(
        "The server could not be reached. Check your connection and try again.")
    expect(page.get_by_label("Message")).to_have_value("while offline")  # nothing typed is lost
    page.context.set_offline(False)
    expect(page.locator(".chat-error")).to_be_hidden()
    expect(answer).to_contain_text("word39 AGAIN", timeout=15_000)
    expect(page.locator(".message-error")).to_have_count(0)
    assert answer.inner_text().count("word10 ") == 1

    # A stream cut for another reason: Reconnect picks the reply up where it is.
    fake_model.push(text(words + " THIRD", delay=0.1))
    send(page, "And again")
    expect(page.locator(".message.assistant")).to_have_count(3)
    answer = page.locator(".message.assistant .md").last
    expect(answer).to_contain_text("word3")
    page.evaluate("window.dispatchEvent(new Event('offline'))")  # the browser thought so; it was wrong
    page.get_by_test_id("reconnect").click()
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(answer).to_contain_text("word39 THIRD", timeout=15_000)
    expect(page.locator(".message.user")).to_have_count(3)

    # A body that simply ends, without the reply's end or [DONE] (a network gone quiet can do that before
    # the browser says it is offline), is a cut too: not a finished reply. The network stays quiet: the
    # page's look at the saved chat fails as well (the server never saw this turn).
    expect(page.locator(".message.assistant").last).to_contain_text("41 out")  # the last turn's look ended
    page.route("**/api/agent-sessions/**", lambda route: route.abort())
    cut_body = "".join(f"data: {json.dumps(c)}\n\n" for c in (
        {"type": "start", "messageId": "am_cut"}, {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "delta": "half a repl"}))
    page.route("**/api/agents/math/chat", lambda route: route.fulfill(
        status=200, headers={"Content-Type": "text/event-stream"}, body=cut_body))
    send(page, "cut me off")
    cut = page.locator(".message.assistant").last
    expect(cut.get_by_test_id("message-error")).to_contain_text("The connection dropped")
    expect(cut.get_by_test_id("reconnect")).to_be_visible()


def test_stop_ends_a_reply_and_keeps_what_came(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_agent(page, fake_model_server, approval=False)
    fake_model.push(text(" ".join(f"w{i}" for i in range(200)), delay=0.1))
    page.goto("/chat")
    send(page, "Go on forever")
    answer = page.locator(".message.assistant .md").last
    expect(answer).to_contain_text("w2")
    # The page's look at the saved chat after this reply is answered late, after the next turn started:
    # what it says is older than the page (held here: the server answers at once, the page gets it later).
    held: list[Any] = []

    def hold_first_look(route: Any) -> None:
        if route.request.method == "GET" and not held:
            held.append((route, route.fetch()))
        else:
            route.continue_()

    page.route("**/api/agent-sessions/*", hold_first_look)
    page.get_by_role("button", name="Stop").click()
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    expect(page.get_by_test_id("message-status")).to_have_text("Stopped")
    status, content = saved_reply(app, page.url.rsplit("/", 1)[1], lambda row: row[0] != "streaming")
    assert status == "stopped" and "w2" in content and "w199" not in content

    fake_model.push(text(" ".join(f"x{i}" for i in range(60)), delay=0.1))
    send(page, "Next one")
    expect(page.locator(".message.assistant .md").last).to_contain_text("x2")
    assert held, "the look after the stopped reply was not made"
    route, stale = held[0]
    assert len(stale.json()["messages"]) == 2
    with page.expect_request_finished(lambda r: r.url == route.request.url):
        route.fulfill(response=stale)  # two messages, while the page shows four and a reply streams
    shown = page.evaluate("() => [document.querySelectorAll('.message.user').length, "
                          "document.getElementById('chat').dataset.streaming]")
    assert shown == [2, "true"], shown  # the old answer did not replace the chat being written
    expect(page.locator(".message.assistant .md").last).to_contain_text("x59", timeout=15_000)
    expect(page.locator(".message.user")).to_have_count(2)


def test_a_model_failure_shows_a_readable_error_and_chat_goes_on(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_agent(page, fake_model_server, approval=False)
    fake_model.push(Step(error_status=400, error_message="model exploded"))
    page.goto("/chat")
    send(page, "Hello?")
    expect(page.locator(".message-error")).to_contain_text("model exploded")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    fake_model.push(text("Back again."))
    send(page, "Try again")
    expect(page.locator(".message.assistant .md").last).to_have_text("Back again.")
    expect(page.locator(".message.user")).to_have_count(2)
    # A budget nearly used up: the chat says what is left above the composer (none was shown before)
    expect(page.get_by_test_id("budget-note")).to_be_hidden()
    used = api(page, "GET", "/api/usage")["total"]
    api(page, "POST", "/api/admin/budgets", {"scope": "everyone", "period": "day",
                                             "maxTokens": used["inputTokens"] + used["outputTokens"] + 2})
    page.reload()
    expect(page.get_by_test_id("budget-note")).to_contain_text("Your daily budget is nearly used up: 2 tokens left")
    # Used up: the next message is refused, and the error box names the request for a report
    budget = api(page, "GET", "/api/admin/budgets")["items"][0]
    api(page, "PUT", f"/api/admin/budgets/{budget['id']}", {"scope": "everyone", "period": "day",
                                                             "maxTokens": budget["maxTokens"] - 2})
    send(page, "One more?")
    expect(page.locator(".chat-error")).to_contain_text("budget")
    expect(page.locator(".chat-error").get_by_test_id("error-reference")).to_have_text(
        re.compile(r"^Reference: [0-9a-f]{32}$"))
    # My usage: the reader's own tokens, charted per day and summed in the table
    page.goto("/usage")
    expect(page.locator("#usage-tokens-chart canvas")).to_have_count(1)
    expect(page.locator("#usage-table tr.total")).to_contain_text(f"{used['inputTokens']:,}")


def test_a_second_tab_behind_the_chat_catches_up_when_refused(
    admin_page: Page, new_page: Callable[..., Page], fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_agent(page, fake_model_server)
    page.goto("/chat")
    send(page, "first")
    expect(page.locator(".message.assistant")).to_contain_text("echo: first")
    other = new_page()
    other.context.add_cookies(page.context.cookies())
    other.goto(page.url)
    expect(other.locator(".message")).to_have_count(2)

    # A reply starts in the first tab; the second, behind, is refused: it says why and shows that reply
    # (with Stop, which the refusal names), and what was typed stays.
    fake_model.push(text(" ".join(f"w{i}" for i in range(40)) + " END", delay=0.05))
    send(page, "slow")
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    other.get_by_label("Message").fill("from the other tab")
    other.get_by_label("Message").press("Enter")
    expect(other.locator(".chat-error")).to_contain_text("A reply is still being written here.")
    expect(other.locator(".message.user .bubble").last).to_have_text("slow")
    expect(other.get_by_role("button", name="Stop")).to_be_visible()
    expect(other.locator(".message.assistant .md").last).to_contain_text("w39 END", timeout=15_000)
    expect(other.get_by_label("Message")).to_have_value("from the other tab")

    # A tool call waits for an answer in the first tab: the second shows the card and can answer it.
    fake_model.push(call("calc", {"expression": "3*3"}), text("Nine."))
    send(page, "3*3?")
    expect(page.locator(".tool-card[data-tool='calc']").get_by_test_id("tool-state")).to_have_text(
        "Waiting for approval")
    other.get_by_label("Message").press("Enter")
    expect(other.locator(".chat-error")).to_contain_text("A tool call waits for your approval")
    card = other.locator(".tool-card[data-tool='calc']")
    card.get_by_role("button", name="Approve").click()
    expect(other.locator(".message.assistant .md").last).to_have_text("Nine.")

    # Written in the second tab; the first, looked at again, shows it.
    send(other, "from the other tab")
    expect(other.locator(".message.assistant .md").last).to_have_text("echo: from the other tab")
    # Windows side by side are both visible: going back to the first one is a focus, and it catches up.
    page.evaluate("window.dispatchEvent(new Event('focus'))")
    expect(page.locator(".message.assistant .md").last).to_have_text("echo: from the other tab")
    send(other, "once more")
    expect(other.locator(".message.assistant .md").last).to_have_text("echo: once more")
    page.evaluate("document.dispatchEvent(new Event('visibilitychange'))")  # or the tab is shown again
    expect(page.locator(".message.assistant .md").last).to_have_text("echo: once more")
    expect(page.locator(".message.assistant .md").nth(-3)).to_have_text("Nine.")
