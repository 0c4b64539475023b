"""A session saved while turns still ran as pydantic-ai agent runs goes on under the engine's own loop
(``chat.steps``, issue 35): its stored model history (``agent_run_history.json``, written by that code:
a finished tool call, then a call paused for approval) is read back, the approval resumes it, and the next
message continues it, the model getting the whole history each time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.chat.helpers import attach, chat, make_tool, post_stream, session_status
from tests.fakes.openai_server import FakeModel, Step, ToolCall, call, text
from tests.support import ApiClient, LiveApp

STORED = Path(__file__).parent / "agent_run_history.json"


def _tool_results(request: dict[str, Any]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in request["messages"] if m["role"] == "tool"}


def test_a_history_saved_by_agent_runs_resumes_and_continues(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    echo, guard = make_tool(admin, "echo", "test-echo"), make_tool(admin, "guard", "test-guarded")
    attach(admin, agent["id"], {"toolId": echo["id"], "position": 0},
           {"toolId": guard["id"], "position": 1, "needsApproval": True})
    # the same two turns as the stored history's, so the session's rows (the reply, its pending approval)
    # are what that code left; then its history is the stored one
    fake_model.push(call("echo", {"text": "stored"}, id="old1"), text("Echoed it."))
    sid = chat(user, "helper", "echo something").session_id
    fake_model.push(Step(text="Let me do that.", tool_calls=[ToolCall("guard", {"action": "keep"}, id="old2")]))
    assert chat(user, "helper", "now act", sid).of("tool-approval-request")
    stored = STORED.read_text()
    assert '"run_id"' in stored and '"old2"' in stored  # written by agent runs, paused on old2
    app.sql("UPDATE agent_sessions SET model_history = ? WHERE id = ?", (stored, sid))

    fake_model.requests.clear()
    fake_model.push(text("Done after all."))
    resumed = post_stream(user, f"/api/agent-sessions/{sid}/approvals", {"toolCallId": "old2", "approved": True})
    (out,) = resumed.of("tool-output-available")
    assert out["toolCallId"] == "old2" and out["output"]["data"] == {"did": "keep", "approved": True}
    assert resumed.text == "Done after all."
    (request,) = fake_model.requests
    results = _tool_results(request)
    assert set(results) == {"old1", "old2"} and "stored" in results["old1"] and "keep" in results["old2"]
    assert [m["content"] for m in request["messages"] if m["role"] == "user"] == ["echo something", "now act"]
    assert session_status(app, sid) == "idle"

    fake_model.push(text("Still here."))
    again = chat(user, "helper", "and again", sid)
    assert again.text == "Still here."
    history = fake_model.requests[-1]["messages"]
    assert [m["content"] for m in history if m["role"] == "user"] == ["echo something", "now act", "and again"]
    assert set(_tool_results(fake_model.requests[-1])) == {"old1", "old2"}
    assert [m["content"] for m in history if m["role"] == "assistant" and m.get("content")] == [
        "Echoed it.", "Let me do that.", "Done after all."]
