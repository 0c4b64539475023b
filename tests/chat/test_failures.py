"""Model failures end a turn with a readable ``error`` chunk; partial text is kept; the session goes on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
    status, content, _ = _failed(app, res.session_id)
    assert (status, content) == ("failed", "one two three ")
    parts = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][-1]["parts"]
    assert parts[-1] == {"type": "text", "text": "one two three ", "state": "done"}
    fake_model.push(text("fine now"))
    again = chat(user, "helper", "again", session_id=res.session_id)
    assert again.text == "fine now"
    # the next request carries the earlier question, so the model knows what was asked
    contents = [m.get("content") for m in fake_model.requests[-1]["messages"]]
    assert "count" in contents and "again" in contents


def test_connection_refused(app: LiveApp, user: ApiClient, admin: ApiClient, fake_model: FakeModel) -> None:
    model = admin.ok("POST", "/api/admin/models", json={"name": "Gone", "provider": "openai",
                                                        "baseUrl": "http://127.0.0.1:9/v1", "model": "gone"})
    make_agent(admin, "gone", modelId=model["id"])
    res = chat(user, "gone", "anyone there?")
    assert res.of("error")[0]["errorText"] == "The model could not be reached (connection failed)."
    assert _failed(app, res.session_id)[0] == "failed"


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
