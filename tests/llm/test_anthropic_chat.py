"""Chats on an Anthropic model, through the chat endpoint, against the fake Messages API server: text,
thinking, tool use with its input streamed in pieces, usage, an ``error`` event mid-stream, an HTTP error;
and the admin's model test button on such a model."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chat.helpers import attach, chat, make_agent, make_tool, register_test_tools, session_status
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    FakeAnthropicServer,
    Redacted,
    Reply,
    Text,
    Thinking,
    ToolUse,
    say,
)
from tests.support import ApiClient, LiveApp

KEY = "sk-ant-test-key"


@pytest.fixture
def claude(admin: ApiClient, anthropic_server: FakeAnthropicServer, fake_anthropic: FakeAnthropic) -> dict[str, Any]:
    model = admin.ok("POST", "/api/admin/models", json={
        "name": "Claude", "provider": "anthropic", "baseUrl": anthropic_server.base_url,
        "model": "claude-sonnet-4-5", "apiKey": KEY})
    return make_agent(admin, "claude", modelId=model["id"], maxOutputTokens=500)


def _reply(app: LiveApp, session_id: str) -> tuple[str, str, str | None, int, int]:
    return app.sql("SELECT status, content, error, input_tokens, output_tokens FROM agent_messages "
                   "WHERE session_id = ? AND role = 'assistant' ORDER BY sort_order DESC LIMIT 1", (session_id,))[0]


def test_an_anthropic_chat_streams_thinking_and_text_and_saves_usage(
    app: LiveApp, user: ApiClient, claude: dict[str, Any], fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(Reply(blocks=[Thinking("The user greets me."), Redacted(), Text("Hello! How can I help?")],
                              input_tokens=31, output_tokens=17))
    res = chat(user, "claude", "Hi")
    assert res.status == 200 and not res.of("error")
    assert res.text == "Hello! How can I help?"
    assert "".join(c["delta"] for c in res.of("reasoning-delta")) == "The user greets me."
    assert _reply(app, res.session_id) == ("complete", "Hello! How can I help?", None, 31, 17)
    assert session_status(app, res.session_id) == "idle"
    request, headers = fake_anthropic.requests[-1], fake_anthropic.headers[-1]
    assert KEY in headers.get("x-api-key", "") + headers.get("authorization", "")
    assert request["model"] == "claude-sonnet-4-5" and request["stream"] is True and request["max_tokens"] == 500
    assert request["system"] == "You are claude." or request["system"][0]["text"] == "You are claude."
    assert request["messages"][-1]["role"] == "user"


def test_an_anthropic_tool_call_streamed_in_pieces_runs_the_tool(
    app: LiveApp, user: ApiClient, admin: ApiClient, claude: dict[str, Any], fake_anthropic: FakeAnthropic,
) -> None:
    register_test_tools(app)
    tool = make_tool(admin, "echo", "test-echo")
    attach(admin, claude["id"], {"toolId": tool["id"], "position": 0})
    fake_anthropic.push(
        Reply(blocks=[Text("Let me echo."), ToolUse("echo", {"text": "ping pong"}, id="toolu_01", pieces=5)],
              input_tokens=50, output_tokens=20),
        say("It said ping pong.", input_tokens=80, output_tokens=6),
    )
    res = chat(user, "claude", "echo something")
    assert [c["input"] for c in res.of("tool-input-available")] == [{"text": "ping pong"}]
    output = res.of("tool-output-available")[0]
    assert output["toolCallId"] == "toolu_01" and output["output"]["data"]["echo"] == "ping pong"
    assert res.text == "Let me echo.It said ping pong."
    assert _reply(app, res.session_id)[3:] == (130, 26)
    followup = fake_anthropic.requests[-1]["messages"]
    results = [block for msg in followup if isinstance(msg["content"], list) for block in msg["content"]
               if block.get("type") == "tool_result"]
    assert results and results[0]["tool_use_id"] == "toolu_01"


def test_an_error_event_mid_stream_keeps_the_partial_text_and_frees_the_session(
    app: LiveApp, user: ApiClient, claude: dict[str, Any], fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(Reply(blocks=[Text("Partial answer"), Text("never sent")], error_after=1,
                              error_type="overloaded_error", error_message="Overloaded"))
    res = chat(user, "claude", "tell me")
    assert res.text == "Partial answer"
    assert "Overloaded" in res.of("error")[0]["errorText"]
    status, content, error, _, _ = _reply(app, res.session_id)
    assert (status, content) == ("failed", "Partial answer") and "Overloaded" in (error or "")
    fake_anthropic.push(say("Back."))
    assert chat(user, "claude", "again", session_id=res.session_id).text == "Back."


def test_an_anthropic_http_error_is_told_to_the_user(
    app: LiveApp, user: ApiClient, claude: dict[str, Any], fake_anthropic: FakeAnthropic
) -> None:
    fake_anthropic.push(Reply(error_status=400, error_type="invalid_request_error",
                              error_message="prompt is too long: 250000 tokens > 200000 maximum"))
    res = chat(user, "claude", "a very long question")
    assert res.of("error")[0]["errorText"] == (
        "The model answered with HTTP 400: prompt is too long: 250000 tokens > 200000 maximum")
    assert _reply(app, res.session_id)[0] == "failed" and session_status(app, res.session_id) == "idle"


def test_the_test_button_on_anthropic_models(
    admin: ApiClient, anthropic_server: FakeAnthropicServer, fake_anthropic: FakeAnthropic
) -> None:
    model = admin.ok("POST", "/api/admin/models", json={
        "name": "Claude", "provider": "anthropic", "baseUrl": anthropic_server.base_url,
        "model": "claude-haiku-4-5", "apiKey": KEY})
    fake_anthropic.push(say("OK"))
    ok = admin.ok("POST", f"/api/admin/models/{model['id']}/test")
    assert ok["ok"] is True and ok["reply"] == "OK"
    fake_anthropic.push(Reply(error_status=401, error_type="authentication_error", error_message="invalid x-api-key"))
    bad = admin.ok("POST", f"/api/admin/models/{model['id']}/test")
    assert bad["ok"] is False and "invalid x-api-key" in bad["error"]
    keyless = admin.ok("POST", "/api/admin/models", json={"name": "No key", "provider": "anthropic",
                                                          "model": "claude-haiku-4-5"})
    res = admin.ok("POST", f"/api/admin/models/{keyless['id']}/test")
    assert res == {**res, "ok": False,
                   "error": "The model cannot be set up: this Anthropic model has no API key; an administrator "
                            "has to add one"}


def test_an_anthropic_reply_holding_a_lone_surrogate_is_streamed_and_saved(
    app: LiveApp, user: ApiClient, claude: dict[str, Any], fake_anthropic: FakeAnthropic
) -> None:
    """Half a UTF-16 pair (JSON ``"\\ud83d"``, a reply cut between the halves of an emoji) cannot be encoded
    as UTF-8: it arrives, and is stored, as U+FFFD, as from an OpenAI-compatible model."""
    fake_anthropic.push(Reply(blocks=[Thinking("hmm\udfff"), Text("cut\ud83d off")], input_tokens=3, output_tokens=2))
    res = chat(user, "claude", "Hi")
    assert res.status == 200 and not res.of("error"), res.body
    assert res.text == "cut\ufffd off"
    assert "".join(c["delta"] for c in res.of("reasoning-delta")) == "hmm\ufffd"
    assert _reply(app, res.session_id)[:3] == ("complete", "cut\ufffd off", None)
    assert session_status(app, res.session_id) == "idle"

