"""Failures end a turn with a readable ``error`` chunk; partial text is kept; the session goes on.

Every way a turn can fail once its session is claimed (the model cannot be built, the model cannot be
reached or answers with an error, the engine raises before or during the stream, the stream cannot be
opened, the turn cannot be saved) is driven over HTTP through the chat endpoint: the client is told, the
reply is ``failed`` with the reason, the session is idle and takes the next message. The engine's own
failures are caused by replacing one of its collaborators in the live app (it runs in this process).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentloft.chat import parts, steps
from agentloft.chat import service as chat_service
from agentloft.llm import clients
from tests.chat.helpers import chat, make_agent, session_status
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, text
from tests.support import ApiClient, LiveApp, login, start_app


def _failed(app: LiveApp, session_id: str) -> tuple[str, str, str]:
    return app.sql("SELECT status, content, error FROM agent_messages WHERE session_id = ? AND role = 'assistant' "
                   "ORDER BY sort_order DESC LIMIT 1", (session_id,))[0]


def test_model_http_500_is_an_error_chunk_and_the_session_stays_usable(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.default = lambda body: Step(error_status=500, error_message="the model is overloaded")
    res = chat(user, "helper", "hello")
    assert res.status == 200
    errors = res.of("error")
    assert errors and errors[0]["errorText"] == "The model answered with HTTP 500: the model is overloaded"
    assert res.types[-1] == "[DONE]"
    # The kind of failure comes first, for the page to word it in the reader's language; it is kept.
    # The provider's own words go along as they are (no catalog can translate them).
    # With the id of the request that started the reply: the page shows it as the failure's reference.
    data = {"code": "model_http", "status": 500, "detail": "the model is overloaded",
            "requestId": res.headers["x-request-id"]}
    assert res.of("data-error") == [{"type": "data-error", "data": data}]
    saved = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][-1]["parts"]
    assert {"type": "data-error", "data": data} in saved
    status, content, error = _failed(app, res.session_id)
    assert (status, content) == ("failed", "") and "HTTP 500" in error
    assert session_status(app, res.session_id) == "idle"
    fake_model.reset()
    fake_model.push(text("back again"))
    assert chat(user, "helper", "retry", session_id=res.session_id).text == "back again"


def test_malformed_chunks_mid_stream_keep_the_partial_text(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text="one two three four five six", malformed_after=3))
    res = chat(user, "helper", "count")
    assert res.text == "one two three "
    assert "could not be read" in res.of("error")[0]["errorText"]
    assert res.of("data-error")[0]["data"]["code"] == "model_bad_reply"
    status, content, _ = _failed(app, res.session_id)
    assert (status, content) == ("failed", "one two three ")
    parts = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][-1]["parts"]
    assert {"type": "text", "text": "one two three ", "state": "done"} in parts
    fake_model.push(text("fine now"))
    again = chat(user, "helper", "again", session_id=res.session_id)
    assert again.text == "fine now"
    # the next request carries the earlier question, so the model knows what was asked
    contents = [m.get("content") for m in fake_model.requests[-1]["messages"]]
    assert "count" in contents and "again" in contents


def test_a_connection_dropped_after_text_arrived_says_so_not_unreachable(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    """The model was reached (its first words are here): it is not a base URL to check but a reply cut off."""
    fake_model.push(Step(text="one two three four five", drop_after=2))
    res = chat(user, "helper", "count")
    assert res.text == "one two "
    assert res.of("error")[0]["errorText"] == "The model's connection broke off in the middle of the reply."
    assert res.of("data-error")[0]["data"] == {"code": "model_cut", "requestId": res.headers["x-request-id"]}
    status, content, _ = _failed(app, res.session_id)
    assert (status, content) == ("failed", "one two ")


def test_connection_refused(app: LiveApp, user: ApiClient, admin: ApiClient, fake_model: FakeModel) -> None:
    model = admin.ok("POST", "/api/admin/models", json={"name": "Gone", "provider": "openai",
                                                        "baseUrl": "http://127.0.0.1:9/v1", "model": "gone"})
    make_agent(admin, "gone", modelId=model["id"])
    res = chat(user, "gone", "anyone there?")
    assert res.of("error")[0]["errorText"] == "The model could not be reached (connection failed)."
    assert res.of("data-error")[0]["data"] == {"code": "model_unreachable", "requestId": res.headers["x-request-id"]}
    _assert_freed(app, res, "could not be reached")
    again = chat(user, "gone", "still nobody?", session_id=res.session_id)
    assert again.status == 200 and again.of("error")  # told again, not refused as busy


def test_model_timeout(tmp_path: Path, template_db: Path, fake_model_server: FakeModelServer,
                       fake_model: FakeModel) -> None:
    live = start_app(tmp_path / "slow", template_db, model_timeout_seconds=0.3)
    try:
        with live.client() as admin:
            admin.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
            model = admin.ok("POST", "/api/admin/models", json={
                "name": "Fake", "provider": "openai", "baseUrl": fake_model_server.base_url, "model": "fake"})
            make_agent(admin, "sleepy", modelId=model["id"])
            fake_model.default = lambda body: Step(text="late", first_delay=5)
            res = chat(admin, "sleepy", "are you awake?")
            assert res.of("error")[0]["errorText"] == "The model did not answer in time."
            assert res.of("data-error")[0]["data"] == {"code": "model_timeout",
                                                       "requestId": res.headers["x-request-id"]}
            assert _failed(live, res.session_id)[0] == "failed"
    finally:
        live.stop()


def test_session_usage_adds_up_across_turns(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("first", input_tokens=3, output_tokens=2), text("second", input_tokens=4, output_tokens=5))
    one = chat(user, "helper", "a")
    chat(user, "helper", "b", session_id=one.session_id)
    detail = user.ok("GET", f"/api/agent-sessions/{one.session_id}")
    assert (detail["inputTokens"], detail["outputTokens"]) == (7, 7)


def test_restart_marks_cut_off_runs_interrupted(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=" ".join(f"w{i}" for i in range(200)), delay=0.05))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "long story"}) as resp:
        sid = resp.headers["x-session-id"]
        for line in resp.iter_lines():
            if '"text-delta"' in line:
                break
    app.stop()
    second = start_app(app.data_dir)
    try:
        status, content, error = _failed(second, sid)
        assert status == "interrupted" and "server" in error and content.startswith("w0 ")
        assert session_status(second, sid) == "idle"
        with second.client() as alice:
            login(alice, "alice")
            fake_model.reset()
            fake_model.push(text("I am back"))
            assert chat(alice, "helper", "still there?", session_id=sid).text == "I am back"
    finally:
        second.stop()


# --- every way a start can fail ------------------------------------------------------------------------


def _assert_freed(app: LiveApp, res: Any, reason: str) -> None:
    """The client got an ``error`` chunk and the end of the stream; the reply is ``failed`` with the reason;
    the session is idle."""
    assert res.status == 200
    errors = res.of("error")
    assert errors and reason in errors[0]["errorText"], res.chunks
    assert res.types[-1] == "[DONE]"
    status, _, error = _failed(app, res.session_id)
    assert status == "failed" and reason in error
    assert session_status(app, res.session_id) == "idle"


def _next_message_works(user: ApiClient, fake_model: FakeModel, session_id: str) -> None:
    fake_model.reset()
    fake_model.push(text("all good again"))
    assert chat(user, "helper", "and now?", session_id=session_id).text == "all good again"


def test_a_model_its_configuration_cannot_build_fails_the_turn(
    app: LiveApp, user: ApiClient, admin: ApiClient, fake_model: FakeModel
) -> None:
    """An Anthropic model saved without a key: the provider cannot be built once the session is claimed."""
    model = admin.ok("POST", "/api/admin/models", json={"name": "Claude", "provider": "anthropic",
                                                        "model": "claude-sonnet-4-5"})
    make_agent(admin, "keyless", modelId=model["id"])
    res = chat(user, "keyless", "hello")
    assert res.of("error")[0]["errorText"] == ("The model is not set up correctly: this Anthropic model has no "
                                               "API key; an administrator has to add one.")
    _assert_freed(app, res, "no API key")
    assert chat(user, "keyless", "hello again", session_id=res.session_id).of("error")


def test_a_provider_that_raises_while_being_built_fails_the_turn(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What anthropic 2.x did with an ``httpx`` client: the SDK refuses its arguments."""
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise TypeError("Invalid `http_client` argument")

    monkeypatch.setattr(clients, "build_model", refuse)
    res = chat(user, "helper", "hello")
    assert res.of("error")[0]["errorText"] == "The reply failed: Invalid `http_client` argument"
    _assert_freed(app, res, "Invalid `http_client` argument")
    monkeypatch.undo()
    _next_message_works(user, fake_model, res.session_id)


def test_an_engine_failure_before_the_model_is_asked_fails_the_turn(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("history repair broke")

    monkeypatch.setattr(steps, "repair_messages", broken)  # the loop's first work, before any request
    res = chat(user, "helper", "hello")
    _assert_freed(app, res, "history repair broke")
    assert not fake_model.requests
    monkeypatch.undo()
    _next_message_works(user, fake_model, res.session_id)


def test_an_engine_failure_mid_stream_fails_the_turn(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Our own code raising between the model's chunks (here: recording what the client saw)."""
    feed = parts.PartsCollector.feed
    seen: list[str] = []

    def feed_until_text(self: parts.PartsCollector, chunk: Any) -> None:
        seen.append(chunk.type)
        if chunk.type == "text-delta" and seen.count("text-delta") == 2:
            raise RuntimeError("collector broke")
        feed(self, chunk)

    monkeypatch.setattr(parts.PartsCollector, "feed", feed_until_text)
    fake_model.push(text("one two three four"))
    res = chat(user, "helper", "hello")
    assert res.text == "one "  # what went out before the failure stays with the client
    assert res.of("error")[0]["errorText"] == "The reply failed: internal error (RuntimeError)."
    _assert_freed(app, res, "internal error (RuntimeError)")
    monkeypatch.undo()
    _next_message_works(user, fake_model, res.session_id)


def test_an_unreadable_history_fails_the_turn_cleanly(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    first = chat(user, "helper", "hello")
    app.sql("UPDATE agent_sessions SET model_history = ? WHERE id = ?", ('[{"kind": "nonsense"}]', first.session_id))
    res = chat(user, "helper", "again", session_id=first.session_id)
    _assert_freed(app, res, "The reply failed")
    assert len(fake_model.requests) == 1  # the model was not asked with a history that is not one


def test_a_stream_that_cannot_be_opened_frees_the_session(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without a buffer there is no stream to put an ``error`` chunk in: the request itself fails (503,
    the error shape), and the turn is ended as failed all the same."""
    buffers = app.server.server.config.app.state.runtime.buffers
    opened = buffers.open

    async def refuse(key: str, meta: dict[str, Any] | None = None) -> None:
        raise ConnectionError("buffer store unreachable")

    first = chat(user, "helper", "hello")
    monkeypatch.setattr(buffers, "open", refuse)
    resp = user.post("/api/agents/helper/chat", json={"message": "again", "sessionId": first.session_id})
    assert resp.status_code == 503 and resp.json()["error"]["code"] == "turn_not_started"
    status, _, error = _failed(app, first.session_id)
    assert status == "failed" and "could not start" in error
    assert session_status(app, first.session_id) == "idle"
    monkeypatch.setattr(buffers, "open", opened)
    _next_message_works(user, fake_model, first.session_id)


def test_a_turn_that_cannot_be_saved_still_ends(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    update_message = chat_service.update_message

    async def refuse_complete(**values: Any) -> None:
        if values.get("status") == "complete":
            raise ConnectionError("database went away")
        await update_message(**values)

    monkeypatch.setattr(chat_service, "update_message", refuse_complete)
    fake_model.push(text("a fine reply"))
    res = chat(user, "helper", "hello")
    assert res.text == "a fine reply"
    assert res.of("error")[0]["errorText"] == "The reply could not be saved: internal error (ConnectionError)."
    assert res.types[-1] == "[DONE]"
    status, _, error = _failed(app, res.session_id)
    assert status == "failed" and "could not be saved" in error
    assert session_status(app, res.session_id) == "idle"
    monkeypatch.undo()
    _next_message_works(user, fake_model, res.session_id)

