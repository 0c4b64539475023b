"""Runs outlive connections: reconnect and replay, a closed browser, stop."""

from __future__ import annotations

import threading
from typing import Any

from tests.chat.helpers import chat, parse_sse, session_status, text_of, wait_for
from tests.fakes.openai_server import FakeModel, Step, text
from tests.support import ApiClient, LiveApp

WORDS = " ".join(f"w{i}" for i in range(30))
LONG = " ".join(f"w{i}" for i in range(300))


def _read_some(client: ApiClient, n_deltas: int, message: str = "tell me") -> tuple[str, str]:
    """Start a chat, read ``n_deltas`` text deltas, then drop the connection (a closed tab)."""
    seen = ""
    with client.stream("POST", "/api/agents/helper/chat", json={"message": message}) as resp:
        sid = resp.headers["x-session-id"]
        count = 0
        for line in resp.iter_lines():
            seen += line + "\n\n" if line else ""
            if '"text-delta"' in line:
                count += 1
                if count >= n_deltas:
                    break
    return sid, seen


def _reply(app: LiveApp, session_id: str) -> tuple[str, str]:
    """The stored assistant reply's (content, status)."""
    content, status = app.sql("SELECT content, status FROM agent_messages WHERE session_id = ? AND "
                              "role = 'assistant'", (session_id,))[0]
    return content, status


def test_reconnect_replays_the_whole_run_then_follows_live(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=WORDS, delay=0.04))
    sid, seen = _read_some(user, 5)
    assert len([c for c in parse_sse(seen) if c["type"] == "text-delta"]) == 5
    resumed = user.get(f"/api/agent-sessions/{sid}/stream")
    assert resumed.headers["x-stream-resume"] == "true"
    assert resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
    chunks = parse_sse(resumed.text)
    assert chunks[0]["type"] == "start" and chunks[-1] == "[DONE]"
    assert text_of(chunks) == WORDS  # from the very first delta, not from where we dropped
    done = user.get(f"/api/agent-sessions/{sid}/stream")
    assert done.json() == {"active": False}


def test_a_closed_browser_does_not_stop_the_run(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=WORDS, delay=0.02))
    sid, _ = _read_some(user, 2)
    wait_for(lambda: session_status(app, sid) == "idle")
    content, status = _reply(app, sid)
    assert (content, status) == (WORDS, "complete")


def test_two_readers_see_the_same_stream(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=WORDS, delay=0.02))
    results: dict[str, str] = {}

    def first() -> None:
        results["post"] = user.post("/api/agents/helper/chat", json={"message": "x"}).text

    thread = threading.Thread(target=first)
    thread.start()
    sid = wait_for(lambda: app.sql("SELECT id FROM agent_sessions"))[0][0]
    with app.client() as other_tab:
        other_tab.cookies = user.cookies
        results["get"] = other_tab.get(f"/api/agent-sessions/{sid}/stream").text
    thread.join()
    assert text_of(parse_sse(results["post"])) == WORDS
    assert text_of(parse_sse(results["get"])) in ("", WORDS)  # empty only if the run ended before the GET


def test_stop_saves_what_was_produced(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, make_user: Any
) -> None:
    eve = make_user("eve")
    fake_model.push(Step(text=LONG, delay=0.05))
    sid, _ = _read_some(user, 3)
    assert eve.post(f"/api/agent-sessions/{sid}/stop").status_code == 404
    assert user.ok("POST", f"/api/agent-sessions/{sid}/stop") == {"stopped": True}
    content, status = _reply(app, sid)
    assert status == "stopped" and content.startswith("w0 w1 w2") and content != LONG
    assert session_status(app, sid) == "idle"
    assert user.ok("POST", f"/api/agent-sessions/{sid}/stop") == {"stopped": False}
    assert user.get(f"/api/agent-sessions/{sid}/stream").json() == {"active": False}
    fake_model.push(text("new turn"))
    assert chat(user, "helper", "again", session_id=sid).text == "new turn"


def test_deleting_a_chat_stops_its_reply(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel, make_user: Any
) -> None:
    """A deleted chat must not go on calling the model where nobody can see or stop it."""
    eve = make_user("eve")
    fake_model.push(Step(text=LONG, delay=0.05))
    sid, _ = _read_some(user, 3)
    assert eve.delete(f"/api/agent-sessions/{sid}").status_code == 404
    assert user.delete(f"/api/agent-sessions/{sid}").status_code == 204
    content, status = _reply(app, sid)
    assert status == "stopped" and content.startswith("w0 w1 w2") and content != LONG
    assert session_status(app, sid) == "idle"
    assert user.get(f"/api/agent-sessions/{sid}").status_code == 404
    assert user.post(f"/api/agent-sessions/{sid}/stop").status_code == 404


def test_stop_ends_open_streams_with_abort(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=LONG, delay=0.05))
    lines: list[str] = []
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "go"}) as resp:
        sid = resp.headers["x-session-id"]
        for line in resp.iter_lines():
            if line:
                lines.append(line)
            if len(lines) == 6:
                user.post(f"/api/agent-sessions/{sid}/stop")
    chunks = parse_sse("\n\n".join(lines))
    assert chunks[-2]["type"] == "abort" and chunks[-1] == "[DONE]"


def test_a_second_message_while_running_is_refused(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=WORDS, delay=0.1))
    sid, _ = _read_some(user, 1)
    busy = user.post("/api/agents/helper/chat", json={"message": "and?", "sessionId": sid})
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "session_busy"
    wait_for(lambda: session_status(app, sid) == "idle")
