"""A callee's end that a dying worker left unsettled, made up by the workers that run on.

A caller agent invokes a callee whose tool needs approval; both turns pause. The calling user answers
the callee's approval on a third worker, which saves the callee's resumed turn and dies before it settles
the task and resumes the caller (or after it settled, before the resume). The two live workers (``app``
and ``twin``) must make that up by themselves within seconds, without a restart, and only one of them
may resume the caller (``a2a.waiting.catch_up`` on their sweeps)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step
from tests.a2a.test_invoke import requests_of
from tests.chat.helpers import attach, chat, make_tool, post_stream, register_test_tools, session_status, wait_for
from tests.fakes.openai_server import FakeModel, call, text
from tests.scale.conftest import on
from tests.support import ApiClient, LiveApp, start_app
from tests.tracing_support import runtime_of


@pytest.fixture
def paused(app: LiveApp, twin: LiveApp, admin: ApiClient, user: ApiClient, model_id: int,
           fake_model: FakeModel) -> dict[str, Any]:
    """The caller's turn waits for its agent-invoke call, whose callee waits for the approval of ``g1``."""
    for live in (app, twin):
        register_test_tools(live)
    caller = admin.ok("POST", "/api/admin/agents", json={"slug": "general", "name": "General",
                                                          "systemPrompt": CALLER_PROMPT, "a2aCallable": True})
    callee = admin.ok("POST", "/api/admin/agents", json={"slug": "coder", "name": "Coder",
                                                          "systemPrompt": CALLEE_PROMPT, "a2aCallable": True})
    invoke = make_tool(admin, "ask-agent", "agent-invoke", config={})
    guard = make_tool(admin, "guard", "test-guarded")
    attach(admin, caller["id"], {"toolId": invoke["id"]})
    attach(admin, callee["id"], {"toolId": guard["id"], "needsApproval": True})
    fake_model.push(caller_step(call("ask-agent", {"agentSlug": "coder", "input": "deploy it"}, id="inv1")),
                    callee_step(call("guard", {"action": "deploy"}, id="g1")))
    reply = chat(user, "general", "please deploy")
    assert reply.status == 200, reply.body
    started = reply.of("data-a2a-task-started")[0]["data"]
    assert session_status(app, reply.session_id) == "awaiting_approval"
    assert app.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (started["taskId"],)) == [("input_required",)]
    return {"caller": reply.session_id, "callee": started["calleeSessionId"], "task": started["taskId"]}


def _resumed_once(app: LiveApp, fake_model: FakeModel, waiting: dict[str, Any], ending: str) -> str:
    """Wait (on the live workers' sweeps) until the caller's turn ended; check it resumed exactly once
    with ``ending``; the caller model's view of the call's result."""
    wait_for(lambda: session_status(app, waiting["caller"]) == "idle", timeout=20)
    (content, status), = app.sql("SELECT content, status FROM agent_messages WHERE session_id = ? "
                                 "AND role = 'assistant' ORDER BY sort_order DESC LIMIT 1", (waiting["caller"],))
    assert status == "complete" and content.endswith(ending)
    caller_calls = requests_of(fake_model, CALLER_PROMPT)
    assert len(caller_calls) == 2  # its first turn and one resume: the workers did not both resume it
    return next(m["content"] for m in caller_calls[-1]["messages"]
                if m["role"] == "tool" and m["tool_call_id"] == "inv1")


def test_a_callee_saved_by_a_worker_that_died_is_settled_by_the_live_ones(
    app: LiveApp, twin: LiveApp, user: ApiClient, paused: dict[str, Any], fake_model: FakeModel, tmp_path: Path,
) -> None:
    doomed = start_app(tmp_path / "doomed", database_url=app.database_url)
    try:
        register_test_tools(doomed)
        # The worker dies right after it saved the callee's turn and gave its session back: what it would
        # have done next (its end-of-turn listener, its own sweeps) never runs.
        runs = runtime_of(doomed).runs
        runs._turn_listeners.clear()
        runs._sweep_tasks.clear()
        fake_model.push(callee_step(text("Deployed version 7.")), caller_step(text("The coder deployed it.")))
        answered = post_stream(on(doomed, user), f"/api/agent-sessions/{paused['callee']}/approvals",
                               {"toolCallId": "g1", "approved": True})
        assert answered.status == 200 and answered.text == "Deployed version 7.", answered.body
        wait_for(lambda: session_status(app, paused["callee"]) == "idle")
    finally:
        doomed.stop()
    seen = _resumed_once(app, fake_model, paused, "The coder deployed it.")
    assert app.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (paused["task"],)) == [("completed",)]
    result = json.loads(seen)
    assert result["success"] is True and result["data"] == "Deployed version 7."
    assert len(requests_of(fake_model, CALLEE_PROMPT)) == 2


def test_a_caller_whose_task_settled_as_its_worker_died_is_resumed_by_the_live_ones(
    app: LiveApp, twin: LiveApp, paused: dict[str, Any], fake_model: FakeModel,
) -> None:
    fake_model.push(caller_step(text("Resumed by a live worker.")))
    # What the dying worker wrote before it died: the callee's turn saved, then the task settled (stamped
    # after the caller's pause, as it is), all at once; the caller's resume never came.
    app.sql("WITH a AS (UPDATE chat_approvals SET status = 'approved' WHERE session_id = ?), "
            "m AS (UPDATE agent_messages SET status = 'complete', content = 'Deployed before dying.' "
            "      WHERE session_id = ? AND role = 'assistant'), "
            "t AS (UPDATE a2a_task_sessions SET state = 'completed', updated_at = "
            "      (SELECT updated_at FROM agent_sessions WHERE id = ?) WHERE id = ?) "
            "UPDATE agent_sessions SET status = 'idle' WHERE id = ?",
            (paused["callee"], paused["callee"], paused["caller"], paused["task"], paused["callee"]))
    seen = _resumed_once(app, fake_model, paused, "Resumed by a live worker.")
    assert "Deployed before dying." in seen
