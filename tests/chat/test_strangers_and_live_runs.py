"""Another user's session does not exist for you, not even while its owner's reply is being written: every
call that takes a run's lease from a session id the client gives checks the owner first, so a stranger
gets the same 404 as for a session that never was, never a 409 that says the session runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from tests.chat.helpers import session_status
from tests.fakes.openai_server import FakeModel, Step, text
from tests.support import ApiClient, LiveApp


def _not_found(response: httpx.Response, what: str) -> None:
    assert response.status_code == 404, (what, response.status_code, response.text)
    assert response.json()["error"]["code"] == "session_not_found", (what, response.text)


def test_a_stranger_gets_404_while_the_owners_run_is_live(
    app: LiveApp, user: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any],
    fake_model: FakeModel,
) -> None:
    bob = make_user("bob")
    fake_model.push(Step(hang=True))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "take your time"}) as live:
        assert live.status_code == 200
        sid = live.headers["x-session-id"]
        assert session_status(app, sid) == "running"
        [(question,)] = app.sql("SELECT id FROM agent_messages WHERE session_id = ? AND role = 'user'", (sid,))
        # the owner is told the session is busy: the run holds its lease
        busy = user.post("/api/agents/helper/chat", json={"message": "and?", "sessionId": sid})
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "session_busy"

        calls: list[tuple[str, str, dict[str, Any] | None]] = [
            ("POST", "/api/agents/helper/chat", {"message": "mine now", "sessionId": sid}),
            ("POST", "/api/llm/chat", {"message": "mine now", "sessionId": sid}),
            ("POST", f"/api/agent-sessions/{sid}/regenerate", None),
            ("POST", f"/api/agent-sessions/{sid}/messages/{question}/resend", {"message": "edited"}),
            ("POST", f"/api/agent-sessions/{sid}/approvals", {"toolCallId": "x", "approved": True}),
            ("POST", f"/api/agent-sessions/{sid}/stop", None),
            ("GET", f"/api/agent-sessions/{sid}/stream", None),
        ]
        for method, url, body in calls:
            _not_found(bob.request(method, url, json=body), f"{method} {url}")

        # nothing of the stranger's reached the session, and the owner's run goes on
        assert session_status(app, sid) == "running"
        assert app.sql("SELECT count(*) FROM agent_messages WHERE session_id = ?", (sid,)) == [(2,)]
        assert user.ok("POST", f"/api/agent-sessions/{sid}/stop") == {"stopped": True}
        live.read()
    reply = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"][-1]
    assert reply["status"] == "stopped"
    fake_model.push(text("back"))
    follow = user.post("/api/agents/helper/chat", json={"message": "go on", "sessionId": sid})
    assert follow.status_code == 200 and "back" in follow.text
