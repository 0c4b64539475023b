"""Issue 14 point 8 in a real browser, in both languages: the sign-in error, sign-up's field problems
(each once, in words), a tool's failure and the step limit's notice in the chat, the built-in tools'
texts on the admin page, and a field problem the server's own check found."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, call, text
from tests.support import LiveApp

pytestmark = pytest.mark.e2e

ZH = {"locale": "zh-CN", "extra_http_headers": {"Accept-Language": "zh-CN"}}


def test_sign_in_and_sign_up_problems_in_words(new_page: Callable[..., Page], app: LiveApp) -> None:
    for options, words in (({}, {
        "wrong": "Wrong username or password.", "short": "A username has 3 to 32 characters.",
        "password": "The password needs at least 8 characters.", "mismatch": "The passwords do not match.",
        "submit": "Create account", "login": "Sign in", "user": "Username", "pass": "Password",
        "repeat": "Repeat password", "chars": "Use only letters, digits, dot, dash and underscore."}),
                           (ZH, {
        "wrong": "用户名或密码错误。", "short": "用户名长度为 3 到 32 个字符。", "password": "密码至少需要 8 个字符。",
        "mismatch": "两次输入的密码不一致。", "submit": "注册", "login": "登录", "user": "用户名", "pass": "密码",
        "repeat": "确认密码", "chars": "只能使用字母、数字、点、短横线和下划线。"})):
        page = new_page(**options)
        page.goto("/signup")
        form = page.locator("#signup-form")
        form.get_by_label(words["user"]).fill("ab")
        form.get_by_label(words["pass"], exact=True).fill("short")
        form.get_by_label(words["repeat"]).fill("other")
        form.get_by_role("button", name=words["submit"]).click()
        problems = form.locator(".field-error")
        expect(problems).to_have_text([words["short"], words["password"], words["mismatch"]])
        expect(form.locator(".form-error")).to_be_hidden()  # said once, beside each field
        form.get_by_label(words["user"]).fill("a b c")
        form.get_by_role("button", name=words["submit"]).click()
        expect(problems.first).to_have_text(words["chars"])

        page.goto("/login")
        page.get_by_label(words["user"]).fill("nobody")
        page.get_by_label(words["pass"]).fill("wrong-password")
        page.locator("#login-form").get_by_role("button", name=words["login"]).click()
        expect(page.locator("#login-form .form-error")).to_have_text(words["wrong"])


def test_tool_failures_and_built_in_texts_in_chinese(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    notes = api(page, "POST", "/api/agent-tools", {"slug": "notes", "name": "Documents and memory",
                                                   "description": "Lets agents keep notes across conversations "
                                                   "and write documents.", "type": "document"})
    api(page, "POST", "/api/agent-tools", {"slug": "calc", "name": "My own calculator", "type": "calculator"})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": notes["id"]}])
    page.context.add_cookies([{"name": "agentloft_lang", "value": "zh-CN", "url": app.url}])

    fake_model.push(call("notes", {"action": "read", "id": "ad_nope"}), text("没找到。"))
    page.goto("/chat")
    page.get_by_label("消息").fill("读我的笔记")
    page.get_by_role("button", name="发送").click()
    card = page.locator(".tool-card[data-tool='notes']")
    expect(card.locator(".tool-error")).to_have_text("文档不存在或无权访问")
    # The tool's own words are shown beneath, not in a tooltip: a phone has no hover to show one.
    expect(card.locator(".tool-error-detail")).to_have_text("document not found or no access")
    expect(card.locator(".tool-error-detail")).to_be_visible()
    assert card.locator("[title]").count() == 0

    # The step limit's notice is worded in the reader's language too.
    api(page, "PUT", f"/api/admin/agents/{agent['id']}", {"maxSteps": 2})
    fake_model.push(call("notes", {"action": "read", "id": "ad_a"}), call("notes", {"action": "read", "id": "ad_b"}))
    page.get_by_label("消息").fill("再读一次")
    page.get_by_role("button", name="发送").click()
    expect(page.locator(".notice-line")).to_have_text(
        "已执行 2 步，达到该智能体单次回复的步数上限，因此停止。发送一条消息即可让它继续。")

    # An API error's words come with what is wrong with the field, in the reader's language too: which
    # field, and the limit it broke (the API's code and values, worded here; not the validator's English).
    page.get_by_label("消息").fill("x" * 100_001)
    page.get_by_role("button", name="发送").click()
    expect(page.locator(".chat-error")).to_have_text("部分输入无效。（消息：最多 100,000 个字符）")
    # A problem the pages have no words for is shown as the API says it.
    too_long = page.evaluate("""async () => (await import('/static/js/dom.js')).errorText(
        {code: 'content_too_long', fields: {content: 'at most 5000 characters'}})""")
    assert too_long == "内容超过最大长度限制。（content：at most 5000 characters）"

    page.goto("/admin/agent-tools")
    default = page.locator("#tools-table tr[data-slug='notes']")
    expect(default.locator("strong")).to_have_text("文档和记忆")  # unchanged default text: translated
    expect(default).to_contain_text("让智能体跨对话记笔记、撰写文档。")
    expect(default.locator("td").nth(1)).to_have_text("文档")  # the type's name
    own = page.locator("#tools-table tr[data-slug='calc']")
    expect(own.locator("strong")).to_have_text("My own calculator")  # an admin's own name stays
    expect(own.locator("td").nth(1)).to_have_text("计算器")


def test_the_servers_own_field_problems_in_chinese(admin_page: Page, app: LiveApp) -> None:
    """A check the server makes itself (not its schema) has a code for the field too: the wrong current
    password is said in Chinese beside its input, not in the server's English."""
    page = admin_page
    page.context.add_cookies([{"name": "agentloft_lang", "value": "zh-CN", "url": app.url}])
    page.goto("/tokens")
    form = page.locator("#password-form")
    form.get_by_label("当前密码").fill("not-my-password")
    form.get_by_label("新密码").fill("a-new-secret")
    form.get_by_role("button", name="修改密码").click()
    expect(form.locator(".field-error")).to_have_text(["当前密码不正确"])
    expect(form.locator(".form-error")).to_be_hidden()
