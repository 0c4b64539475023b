"""Issue 14 point 2 in a real browser: copy a message, regenerate the last reply, retry a failed one (with
words on what to check), edit and resend an earlier message, the time, model and usage of each reply,
and a link from the document tool's card to its document."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, call, text

pytestmark = pytest.mark.e2e


def setup_agent(page: Page, server: FakeModelServer) -> None:
    add_fake_model(page, server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    tool = api(page, "POST", "/api/agent-tools", {"slug": "notes", "name": "Notes", "type": "document"})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tool["id"]}])


def send(page: Page, message: str) -> None:
    page.get_by_label("Message").fill(message)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)


def test_copy_regenerate_retry_edit_and_reply_details(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    setup_agent(page, fake_model_server)
    # Until the chat's script runs, Send cannot be pressed: the browser would submit the form itself.
    page.route("**/js/chat/chat.js", lambda route: route.abort())
    page.goto("/chat")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    page.unroute("**/js/chat/chat.js")
    page.goto("/chat")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()

    fake_model.push(text("First **answer**", input_tokens=21, output_tokens=4))
    send(page, "Q1")
    replies = page.locator(".message.assistant")
    first = replies.nth(0)
    meta = first.get_by_test_id("message-meta")
    expect(meta).to_contain_text("Fake")
    expect(meta).to_contain_text("21 in · 4 out")
    expect(meta.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-\d\d-\d\dT"))
    user_meta = page.locator(".message.user").first.get_by_test_id("message-meta")
    expect(user_meta.locator("time")).to_have_attribute("datetime", re.compile(r"^\d{4}-\d\d-\d\dT"))
    first.get_by_role("button", name="Copy text").click()
    assert page.evaluate("navigator.clipboard.readText()") == "First **answer**"

    # Regenerate replaces the last reply (and only the last one offers it).
    fake_model.push(text("Second answer"))
    first.get_by_test_id("regenerate").click()
    expect(replies).to_have_count(1)
    expect(replies.nth(0)).to_contain_text("Second answer")
    expect(page.get_by_label("Message")).to_be_focused()  # the pressed button went with the old reply
    assert fake_model.requests[-1]["messages"][-1]["content"] == "Q1"

    # A failure says what happened and what to check, and Retry gets a reply.
    fake_model.push(Step(error_status=401, error_message="Incorrect API key provided"))
    send(page, "Q2")
    failed = replies.nth(1)
    error = failed.get_by_test_id("message-error")
    expect(error).to_contain_text("The model provider did not accept the API key (HTTP 401).")
    expect(error).to_contain_text("Check the API key under Admin → Models")  # an admin's hint
    expect(error).to_contain_text("Incorrect API key provided")
    expect(replies.nth(0).get_by_test_id("regenerate")).to_have_count(0)
    fake_model.push(text("Recovered"))
    failed.get_by_test_id("retry").click()
    expect(replies.nth(1)).to_contain_text("Recovered")
    expect(replies.nth(1).get_by_test_id("message-error")).to_have_count(0)
    page.screenshot(path="/tmp/shots/chat-messages.png")

    # Editing the first message cuts what came after it and runs again from there.
    fake_model.push(text("Answer to the edit"))
    user_one = page.locator(".message.user").nth(0)
    user_one.hover()
    user_one.get_by_role("button", name="Edit").click()
    editor = user_one.get_by_label("Edited text")
    expect(editor).to_be_focused()
    page.keyboard.press("Escape")  # cancelled: back on the button that opened it
    expect(user_one.get_by_role("button", name="Edit")).to_be_focused()
    page.keyboard.press("Enter")
    expect(editor).to_have_value("Q1")
    editor.fill("Q1, better asked")
    user_one.get_by_role("button", name="Send").click()
    expect(page.locator(".message")).to_have_count(2)
    expect(page.get_by_label("Message")).to_be_focused()
    expect(page.locator(".message.user .bubble")).to_have_text("Q1, better asked")
    expect(replies.nth(0)).to_contain_text("Answer to the edit")
    page.reload()
    expect(page.locator(".message.user .bubble")).to_have_text("Q1, better asked")
    expect(replies).to_have_count(1)

    # The document tool's card links to the document it wrote.
    fake_model.push(call("notes", {"action": "create", "title": "Plan", "content": "step one"}), text("Saved."))
    send(page, "save a plan")
    link = page.locator(".tool-card[data-tool='notes']").get_by_test_id("tool-link")
    expect(link).to_have_text("Open “Plan”")
    link.click()
    expect(page).to_have_url(re.compile(r"/agent-documents/ad_"))
    expect(page.get_by_test_id("doc-title")).to_have_text("Plan")


def test_a_failure_is_explained_in_chinese(
    admin_page: Page, new_page: object, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_agent(page, fake_model_server)
    page.context.add_cookies([{"name": "agentloft_lang", "value": "zh-CN", "url": page.url}])
    fake_model.push(Step(error_status=404, error_message="no such model"))
    page.goto("/chat")
    page.get_by_label("消息").fill("你好")
    page.get_by_role("button", name="发送").click()
    error = page.get_by_test_id("message-error")
    expect(error).to_contain_text("找不到该模型（HTTP 404）。")
    expect(error).to_contain_text("请在“管理 → 模型”中检查模型名称和 Base URL。")
    expect(page.get_by_role("button", name="重试")).to_be_visible()
    # Under the Chinese words only the provider's own (no English sentence of ours), and no empty bubble
    # above the box, live and after a reload.
    for _ in range(2):
        expect(page.get_by_test_id("error-detail")).to_have_text("no such model")
        # the id of the request that started the reply, which names its log lines
        expect(page.get_by_test_id("error-reference")).to_have_text(re.compile(r"^参考编号：[0-9a-f]{32}$"))
        expect(error).not_to_contain_text("The model answered")
        expect(page.locator(".message.assistant .bubble")).to_be_hidden()
        page.reload()
