"""Agent chat over HTTP: the stream's chunks and headers, sessions, persistence, what the model is sent."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import chat, text_of
from tests.fakes.openai_server import FakeModel, text
from tests.support import ApiClient, LiveApp


def test_chat_streams_ui_message_chunks_and_saves_both_messages(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("Hello there, how can I help?", input_tokens=12, output_tokens=7))
    res = chat(user, "helper", "Hi! Who are you?")
    assert res.status == 200
    assert res.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert res.headers["content-type"].startswith("text/event-stream")
    assert res.types[0] == "start" and res.types[-1] == "[DONE]"
    for kind in ("start-step", "text-start", "text-delta", "text-end", "finish-step", "finish"):
        assert kind in res.types
    assert res.text == "Hello there, how can I help?"
    sid = res.session_id
    assert sid and sid.startswith("as_")
    assert res.chunks[0]["messageId"].startswith("am_")

    rows = app.sql("SELECT role, content, status, input_tokens, output_tokens, sort_order FROM agent_messages "
                   "WHERE session_id = ? ORDER BY sort_order", (sid,))
    assert rows == [("user", "Hi! Who are you?", "complete", None, None, 0),
                    ("assistant", "Hello there, how can I help?", "complete", 12, 7, 1)]
    detail = user.ok("GET", f"/api/agent-sessions/{sid}")
    assert detail["title"] == "Hi! Who are you?"
    assert detail["agentSlug"] == "helper" and detail["kind"] == "agent" and detail["status"] == "idle"
    assert [m["role"] for m in detail["messages"]] == ["user", "assistant"]
    assert detail["messages"][1]["parts"][-1] == {"type": "text", "text": "Hello there, how can I help?",
                                                  "state": "done"}
    assert detail["active"] is False and detail["inputTokens"] == 12 and detail["outputTokens"] == 7

    sent = fake_model.requests[-1]
    assert sent["messages"][0] == {"role": "system", "content": "You are helper."}
    assert sent["messages"][-1]["content"] == "Hi! Who are you?"
    assert 321 in (sent.get("max_tokens"), sent.get("max_completion_tokens"))
    assert sent["stream"] is True


def test_second_message_continues_the_session_with_history(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    first = chat(user, "helper", "My name is Ada.")
    fake_model.push(text("Your name is Ada."))
    second = chat(user, "helper", "What is my name?", session_id=first.session_id)
    assert second.session_id == first.session_id
    assert second.text == "Your name is Ada."
    roles = [(m["role"], m.get("content")) for m in fake_model.requests[-1]["messages"]]
    assert roles[1:] == [("user", "My name is Ada."), ("assistant", "echo: My name is Ada."),
                         ("user", "What is my name?")]
    orders = app.sql("SELECT sort_order FROM agent_messages WHERE session_id = ? ORDER BY sort_order",
                     (first.session_id,))
    assert [o for (o,) in orders] == [0, 1, 2, 3]


def test_chat_bad_requests(user: ApiClient, anon: ApiClient, agent: dict[str, Any], admin: ApiClient) -> None:
    assert user.post("/api/agents/helper/chat", json={"message": "   "}).status_code == 422
    assert user.post("/api/agents/helper/chat", json={}).status_code == 422
    assert user.post("/api/agents/helper/chat", json={"message": "x", "extra": 1}).status_code == 422
    assert user.post("/api/agents/nobody/chat", json={"message": "x"}).status_code == 404
    assert anon.post("/api/agents/helper/chat", json={"message": "x"}).status_code == 401
    missing = user.post("/api/agents/helper/chat", json={"message": "x", "sessionId": "as_nope"})
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "session_not_found"
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"enabled": False})
    assert user.post("/api/agents/helper/chat", json={"message": "x"}).status_code == 404


def test_no_model_configured_is_a_clear_error_and_leaves_no_session(
    app: LiveApp, user: ApiClient, admin: ApiClient
) -> None:
    admin.ok("POST", "/api/admin/agents", json={"slug": "lonely", "name": "Lonely"})
    res = user.post("/api/agents/lonely/chat", json={"message": "hello"})
    assert res.status_code == 409 and res.json()["error"]["code"] == "no_model"
    assert app.sql("SELECT count(*) FROM agent_sessions") == [(0,)]


def test_plain_llm_chat_uses_default_model_and_user_visible_tools(
    app: LiveApp, user: ApiClient, admin: ApiClient, model_id: int, fake_model: FakeModel, test_tools: None
) -> None:
    from tests.chat.helpers import make_tool

    make_tool(admin, "echo_all", "test-echo")
    make_tool(admin, "echo_admin", "test-echo", adminOnly=True)
    fake_model.push(text("plain answer"))
    res = user.post("/api/llm/chat", json={"message": "just talk"})
    assert res.status_code == 200
    from tests.chat.helpers import parse_sse

    chunks = parse_sse(res.text)
    assert text_of(chunks) == "plain answer"
    sent = fake_model.requests[-1]
    names = {t["function"]["name"] for t in sent.get("tools", [])}
    assert "echo_all" in names and "echo_admin" not in names
    assert sent["model"] == "fake-model"
    sid = res.headers["x-session-id"]
    detail = user.ok("GET", f"/api/agent-sessions/{sid}")
    assert detail["kind"] == "llm" and detail["agentId"] is None
    # an admin sees the admin-only tool too
    admin.post("/api/llm/chat", json={"message": "admin talk"})
    names = {t["function"]["name"] for t in fake_model.requests[-1].get("tools", [])}
    assert {"echo_all", "echo_admin"} <= names
