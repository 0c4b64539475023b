"""Issue 7 in a real browser: from an empty install (with the first-start defaults) the first admin signs
up, lands on the setup page, adds a model from a preset, tests it, and gets a streamed answer from the
Assistant, through the pages only. Users meanwhile read a notice instead of a broken chat."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import api
from tests.fakes.openai_server import FakeModel, FakeModelServer, text
from tests.support import LiveApp, start_app

pytestmark = pytest.mark.e2e

ANSWER = "Hello! I am the **Assistant** and I can use a calculator, the clock and the web."


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    """A fresh install as `agentloft serve` starts it: defaults (tools, the Assistant) created, no model."""
    live = start_app(tmp_path / "data", template_db, create_defaults=True)
    yield live
    live.stop()


def test_empty_install_to_a_streamed_answer_through_onboarding(
    page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page.goto("/")
    expect(page).to_have_url(f"{app.url}/login")
    page.get_by_role("link", name="Create the first (administrator) account").click()
    page.get_by_label("Username").fill("root")
    page.get_by_label("Password", exact=True).fill("password123")
    page.get_by_label("Repeat password").fill("password123")
    page.get_by_role("button", name="Create account").click()
    expect(page).to_have_url(f"{app.url}/setup")

    # The OpenAI preset asks for a key, and saves nothing without one; Ollama fills its local URL and needs
    # none; a custom OpenAI-compatible server takes a URL and, if it wants one, a key.
    expect(page.get_by_label("OpenAI", exact=True)).to_be_checked()
    # every preset's label on one line of its tile, the long custom one too
    tiles = page.locator(".preset span")
    heights = [tiles.nth(i).bounding_box()["height"] for i in range(tiles.count())]  # type: ignore[index]
    assert max(heights) < 1.5 * min(heights), heights
    expect(page.get_by_label("API key")).to_be_visible()
    expect(page.get_by_label("Reads images (vision)")).to_be_checked()
    page.get_by_label("Model name").fill("gpt-4o-mini")
    page.get_by_role("button", name="Save and test").click()
    expect(page.locator(".field-error")).to_have_text("OpenAI needs an API key.")
    expect(page.get_by_label("API key")).to_be_focused()
    assert app.sql("SELECT count(*) FROM model_configs") == [(0,)]
    page.get_by_label("Custom (OpenAI-compatible)").check()
    expect(page.get_by_label("Base URL")).to_have_value("")
    expect(page.get_by_label("API key")).to_be_visible()
    expect(page.get_by_text("Only if your server asks for one.")).to_be_visible()
    page.get_by_label("Ollama").check()
    expect(page.get_by_label("Base URL")).to_have_value("http://127.0.0.1:11434/v1")
    expect(page.get_by_label("API key")).to_be_hidden()
    expect(page.get_by_text("No API key is needed for this provider.")).to_be_visible()
    expect(page.get_by_label("Model name")).to_have_attribute("placeholder", "llama3.2")
    expect(page.get_by_label("Reads images (vision)")).not_to_be_checked()
    page.screenshot(path="/tmp/agentloft-setup-en.png", full_page=True)

    # Our "Ollama" is the fake model server; the test request reaches it and the page says it works.
    page.get_by_label("Base URL").fill(fake_model_server.base_url)
    page.get_by_label("Model name").fill("fake-model")
    fake_model.push(text("OK"))
    page.get_by_role("button", name="Save and test").click()
    expect(page.get_by_test_id("setup-result")).to_have_text(re.compile(r"It works: the model answered in \d+ ms\."))
    assert app.sql("SELECT name, provider, base_url, model, is_default, enabled FROM model_configs") == [
        ("Ollama", "openai", fake_model_server.base_url.rstrip("/"), "fake-model", 1, 1)]
    page.screenshot(path="/tmp/agentloft-setup-tested.png", full_page=True)

    page.get_by_role("button", name="Done — start chatting").click()
    expect(page).to_have_url(f"{app.url}/chat")
    expect(page.get_by_label("Agent")).to_have_value("assistant")

    fake_model.push(text(ANSWER, delay=0.12))
    page.get_by_label("Message").fill("Hi, who are you?")
    page.get_by_role("button", name="Send").click()
    answer = page.locator(".message.assistant .md").last
    # Streamed: the first words show while the reply is still running (Stop is offered), then all of it.
    expect(page.get_by_role("button", name="Stop")).to_be_visible()
    expect(answer).to_contain_text("Hello!")
    expect(answer.locator("strong")).to_have_text("Assistant")
    expect(answer).to_contain_text("the clock and the web.")
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    page.screenshot(path="/tmp/agentloft-first-answer.png")

    chat_request = fake_model.requests[-1]
    assert chat_request["model"] == "fake-model"
    assert "You are Assistant" in chat_request["messages"][0]["content"]


def test_test_failure_shows_the_providers_error_and_a_retry_updates_the_same_model(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    page.goto("/")
    expect(page).to_have_url(f"{app.url}/setup")
    page.get_by_label("vLLM").check()
    expect(page.get_by_label("Base URL")).to_have_value("http://127.0.0.1:8001/v1")
    expect(page.get_by_text("start it with --port 8001")).to_be_visible()
    page.get_by_label("Base URL").fill(fake_model_server.base_url)
    page.get_by_label("Model name").fill("wrong-model")
    fake_model.push(text("", error_status=404, error_message="The model `wrong-model` does not exist"))
    page.get_by_role("button", name="Save and test").click()
    result = page.get_by_test_id("setup-result")
    expect(result).to_contain_text("The model did not answer:")
    expect(result).to_contain_text("The model answered with HTTP 404: The model `wrong-model` does not exist")
    # a model that did not answer is kept, switched off: it is not the default, and Done is not offered
    assert app.sql("SELECT enabled, is_default FROM model_configs") == [(0, 0)]
    expect(page.get_by_role("button", name="Done — start chatting")).to_be_hidden()
    page.get_by_label("Model name").fill("fake-model")
    fake_model.push(text("OK"))
    page.get_by_role("button", name="Save and test").click()
    expect(result).to_have_text(re.compile(r"It works"))
    assert app.sql("SELECT name, model, enabled, is_default FROM model_configs") == [("vLLM", "fake-model", 1, 1)]


def test_screens_in_both_languages(
    admin_page: Page, app: LiveApp, new_page: Callable[..., Page]
) -> None:
    api(admin_page, "POST", "/api/admin/users", {"username": "alice", "password": "password123", "role": "user"})
    zh = {"locale": "zh-CN", "extra_http_headers": {"Accept-Language": "zh-CN,zh;q=0.9"}}

    admin_zh = new_page(**zh)
    admin_zh.goto("/login")
    api(admin_zh, "POST", "/api/auth/login", {"username": "root", "password": "password123"})
    admin_zh.goto("/chat")
    expect(admin_zh).to_have_url(f"{app.url}/setup")
    expect(admin_zh.get_by_role("heading", name="配置模型")).to_be_visible()
    admin_zh.get_by_label("OpenRouter").check()
    expect(admin_zh.get_by_label("API 密钥")).to_be_visible()
    admin_zh.screenshot(path="/tmp/agentloft-setup-zh.png", full_page=True)

    for options, words, shot in (({}, "An administrator has not set up a model yet", "en"),
                                 (zh, "管理员还没有配置模型", "zh")):
        alice = new_page(**options)
        alice.goto("/login")
        alice.locator("#login-form [name=username]").fill("alice")
        alice.locator("#login-form [name=password]").fill("password123")
        alice.locator("#login-form button[type=submit]").click()
        expect(alice).to_have_url(f"{app.url}/chat")
        expect(alice.get_by_test_id("no-model-notice")).to_contain_text(words)
        expect(alice.locator("#composer")).to_have_count(0)
        alice.screenshot(path=f"/tmp/agentloft-no-model-{shot}.png")


def test_presets_in_the_admin_model_form(
    admin_page: Page, app: LiveApp, fake_model_server: FakeModelServer
) -> None:
    page = admin_page
    page.goto("/admin/models")
    page.get_by_role("button", name="New model").click()
    dialog = page.locator("#model-dialog")
    expect(dialog.get_by_label("API key")).to_be_visible()  # "Custom": every field shows
    dialog.get_by_label("Preset").select_option(label="Ollama")
    expect(dialog.get_by_label("Name")).to_have_value("Ollama")
    expect(dialog.get_by_label("Provider")).to_have_value("openai")
    expect(dialog.get_by_label("Base URL")).to_have_value("http://127.0.0.1:11434/v1")
    expect(dialog.get_by_label("Model", exact=True)).to_have_attribute("placeholder", "llama3.2")
    expect(dialog.get_by_label("API key")).to_be_hidden()
    expect(dialog.get_by_text("This preset needs no API key.")).to_be_visible()
    expect(dialog.get_by_label("Reads images (vision)")).not_to_be_checked()

    dialog.get_by_label("Preset").select_option(label="Anthropic")
    expect(dialog.get_by_label("Name")).to_have_value("Anthropic")  # an automatic name follows the preset
    expect(dialog.get_by_label("Provider")).to_have_value("anthropic")
    expect(dialog.get_by_label("Base URL")).to_have_value("")
    expect(dialog.get_by_label("API key")).to_be_visible()
    expect(dialog.get_by_label("Reads images (vision)")).to_be_checked()  # the preset's default

    dialog.get_by_label("Preset").select_option(label="LM Studio")
    expect(dialog.get_by_label("Reads images (vision)")).not_to_be_checked()
    dialog.get_by_label("Reads images (vision)").check()  # the admin knows the model loaded there does
    dialog.get_by_label("Base URL").fill(fake_model_server.base_url)
    dialog.get_by_label("Model", exact=True).fill("fake-model")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    expect(page.locator("#models-table tr[data-name='LM Studio']")).to_contain_text("fake-model")
    expect(page.locator("#models-table tr[data-name='LM Studio']")).to_contain_text("vision")
    assert app.sql("SELECT provider, api_key_enc, vision FROM model_configs") == [("openai", None, 1)]

    # An embedding model: what it cannot be is not offered, its Test embeds, and only it is offered for
    # knowledge search in Settings.
    page.get_by_role("button", name="New model").click()
    dialog.get_by_label("Used for").select_option("embedding")
    expect(dialog.get_by_label("Default model")).to_be_hidden()
    expect(dialog.get_by_label("Reads images (vision)")).to_be_hidden()
    expect(dialog.locator("#model-preset option", has_text="Anthropic")).to_be_disabled()
    expect(dialog.locator("[name=provider] option[value=anthropic]")).to_be_disabled()
    dialog.get_by_label("Preset").select_option(label="Ollama")
    expect(dialog.get_by_label("Model", exact=True)).to_have_attribute("placeholder", "nomic-embed-text")
    dialog.get_by_label("Name").fill("Embedder")
    dialog.get_by_label("Base URL").fill(fake_model_server.base_url)
    dialog.get_by_label("Model", exact=True).fill("fake-embed")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    row = page.locator("#models-table tr[data-name='Embedder']")
    expect(row).to_contain_text("embeddings")
    row.get_by_role("button", name="Test").click()
    expect(row.locator(".test-result")).to_contain_text("256 dimensions")
    row.get_by_role("button", name="Edit").click()
    expect(dialog.get_by_label("Used for")).to_be_disabled()
    dialog.get_by_role("button", name="Cancel").click()

    page.goto("/admin/settings")
    picker = page.get_by_label("Embedding model for knowledge search")
    expect(picker.locator("option")).to_have_text(["None: text search only", "Embedder"])
    picker.select_option(label="Embedder")
    page.locator("#settings-form").get_by_role("button", name="Save").click()  # not the sign-in provider form
    expect(page.get_by_role("status")).to_be_visible()
    page.reload()
    expect(picker).to_have_value(str(app.sql("SELECT id FROM model_configs WHERE kind = 'embedding'")[0][0]))
