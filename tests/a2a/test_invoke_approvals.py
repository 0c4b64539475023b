"""Approvals inside a callee: a caller agent invokes a local callee whose tool needs approval. The caller's
turn waits with its agent-invoke call open; the calling user answers the callee's approval through the
callee session's approvals route (the panel's buttons); the callee resumes into the panel's buffer, then
the caller resumes with the callee's outcome as the call's result. On any worker, after a restart."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step
from tests.a2a.test_invoke import panel, requests_of
from tests.chat.helpers import (
    Streamed,
    attach,
    chat,
    make_tool,
    post_stream,
    register_test_tools,
    session_status,
    wait_for,
)
from tests.fakes.openai_server import FakeModel, ToolCall, call, text
from tests.support import ApiClient, LiveApp, login, start_app

Agents = tuple[dict[str, Any], dict[str, Any]]


@pytest.fixture
def guarded_callee(app: LiveApp, admin: ApiClient, pair: Agents) -> Agents:
    """The pair, the callee holding a tool whose every call needs approval."""
    register_test_tools(app)
    tool = make_tool(admin, "guard", "test-guarded")
    attach(admin, pair[1]["id"], {"toolId": tool["id"], "needsApproval": True})
    return pair


def _pause(user: ApiClient, fake_model: FakeModel) -> tuple[Streamed, dict[str, Any]]:
    """The caller asks the callee, whose first step calls the guarded tool: both turns pause."""
    fake_model.push(caller_step(call("ask-agent", {"agentSlug": "coder", "input": "deploy it"}, id="inv1")),
                    callee_step(call("guard", {"action": "deploy"}, id="g1")))
    reply = chat(user, "general", "please deploy")
    assert reply.status == 200, reply.body
    started = reply.of("data-a2a-task-started")[0]["data"]
    return reply, started


def _tool_message(fake_model: FakeModel, call_id: str) -> str:
    """The caller model's view of the agent-invoke call's result, in its last request."""
    last = requests_of(fake_model, CALLER_PROMPT)[-1]
    return next(m["content"] for m in last["messages"] if m["role"] == "tool" and m["tool_call_id"] == call_id)


def _caller_done(app: LiveApp, session_id: str) -> bool:
    return session_status(app, session_id) == "idle"


def test_the_caller_waits_for_the_callee_approval_then_resumes_with_its_reply(
    app: LiveApp, user: ApiClient, make_user: Callable[..., ApiClient], guarded_callee: Agents,
    fake_model: FakeModel,
) -> None:
    reply, started = _pause(user, fake_model)
    task_id, callee_sid = started["taskId"], started["calleeSessionId"]
    # The caller's turn ends waiting, its call open (no output); the task is kept open, not failed.
    assert not reply.of("tool-output-available") and not reply.of("tool-output-error"), reply.types
    assert reply.types[-1] == "[DONE]" and "error" not in reply.types
    assert session_status(app, reply.session_id) == "awaiting_approval"
    assert session_status(app, callee_sid) == "awaiting_approval"
    assert app.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (task_id,)) == [("input_required",)]
    # The panel's stream carries the callee's approval request, and no error.
    chunks = panel(user, task_id)
    assert [c["toolCallId"] for c in chunks if isinstance(c, dict) and c["type"] == "tool-approval-request"] == ["g1"]
    assert not [c for c in chunks if isinstance(c, dict) and c["type"] == "error"]
    # The callee's session tells its owner what waits (the panel reads it once the buffer is gone).
    waits = user.ok("GET", f"/api/agent-sessions/{callee_sid}")["pendingApprovals"]
    assert [(a["toolCallId"], a["toolName"], a["input"]) for a in waits] == [("g1", "guard", {"action": "deploy"})]
    # A new message in the caller's chat waits for the call, like one waiting for an approval.
    busy = user.post("/api/agents/general/chat", json={"message": "hello?", "sessionId": reply.session_id})
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "approval_pending"

    # Nobody else may answer (or see) the callee's approval.
    bob = make_user("bob")
    refused = bob.post(f"/api/agent-sessions/{callee_sid}/approvals", json={"toolCallId": "g1", "approved": True})
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "session_not_found"
    assert bob.get(f"/api/agent-sessions/{callee_sid}").status_code == 404
    assert session_status(app, callee_sid) == "awaiting_approval"

    fake_model.push(callee_step(text("Deployed version 7.")), caller_step(text("The coder deployed version 7.")))
    resumed = post_stream(user, f"/api/agent-sessions/{callee_sid}/approvals", {"toolCallId": "g1", "approved": True})
    assert resumed.status == 200, resumed.body
    assert resumed.text == "Deployed version 7."  # the callee's resumed reply, as the panel follows it
    out = resumed.of("tool-output-available")
    assert out and out[0]["output"]["data"] == {"did": "deploy", "approved": True}

    wait_for(lambda: _caller_done(app, reply.session_id))
    assert app.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (task_id,)) == [("completed",)]
    result = json.loads(_tool_message(fake_model, "inv1"))
    assert result["success"] is True and result["data"] == "Deployed version 7."
    assert result["metadata"]["taskId"] == task_id and result["metadata"]["state"] == "completed"
    detail = user.ok("GET", f"/api/agent-sessions/{reply.session_id}")
    last = detail["messages"][-1]
    assert last["status"] == "complete" and last["content"].endswith("The coder deployed version 7.")
    part = next(p for p in last["parts"] if p.get("toolCallId") == "inv1")
    assert part["state"] == "output-available"
    assert len(requests_of(fake_model, CALLEE_PROMPT)) == 2


def test_a_rejected_callee_call_fails_the_callers_call_with_the_reason(
    app: LiveApp, user: ApiClient, guarded_callee: Agents, fake_model: FakeModel,
) -> None:
    reply, started = _pause(user, fake_model)
    fake_model.push(callee_step(text("I did not deploy.")), caller_step(text("The deploy was refused.")))
    answered = post_stream(user, f"/api/agent-sessions/{started['calleeSessionId']}/approvals",
                           {"toolCallId": "g1", "approved": False, "reason": "not on a Friday"})
    assert answered.status == 200 and answered.text == "I did not deploy."
    wait_for(lambda: _caller_done(app, reply.session_id))
    assert app.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (started["taskId"],)) == [("failed",)]
    seen = _tool_message(fake_model, "inv1")
    assert "rejected" in seen and "'guard'" in seen and "not on a Friday" in seen and "I did not deploy." in seen
    last = user.ok("GET", f"/api/agent-sessions/{reply.session_id}")["messages"][-1]
    assert last["status"] == "complete" and last["content"].endswith("The deploy was refused.")
    part = next(p for p in last["parts"] if p.get("toolCallId") == "inv1")
    assert part["state"] == "output-error" and "not on a Friday" in part["errorText"]


def test_the_approval_is_answered_after_a_restart(
    app: LiveApp, user: ApiClient, guarded_callee: Agents, fake_model: FakeModel,
) -> None:
    reply, started = _pause(user, fake_model)
    app.stop()
    second = start_app(app.data_dir)
    try:
        register_test_tools(second)
        with second.client() as alice:
            login(alice, "alice")
            fake_model.push(callee_step(text("Deployed after the restart.")), caller_step(text("All done.")))
            answered = post_stream(alice, f"/api/agent-sessions/{started['calleeSessionId']}/approvals",
                                   {"toolCallId": "g1", "approved": True})
            assert answered.text == "Deployed after the restart."
            wait_for(lambda: _caller_done(second, reply.session_id))
            last = alice.ok("GET", f"/api/agent-sessions/{reply.session_id}")["messages"][-1]
            assert last["status"] == "complete" and last["content"].endswith("All done.")
        assert "Deployed after the restart." in _tool_message(fake_model, "inv1")
    finally:
        second.stop()


def test_a_start_resumes_a_caller_its_stopped_worker_left_waiting(
    app: LiveApp, user: ApiClient, guarded_callee: Agents, fake_model: FakeModel,
) -> None:
    """The callee's resumed turn was saved, but its worker stopped before it settled the task and resumed
    the caller: the next start does both."""
    reply, started = _pause(user, fake_model)
    callee_sid = started["calleeSessionId"]
    app.stop()
    app.sql("UPDATE chat_approvals SET status = 'approved' WHERE session_id = ?", (callee_sid,))
    app.sql("UPDATE agent_messages SET status = 'complete', content = 'Deployed before the stop.' "
            "WHERE session_id = ? AND role = 'assistant'", (callee_sid,))
    app.sql("UPDATE agent_sessions SET status = 'idle' WHERE id = ?", (callee_sid,))
    fake_model.push(caller_step(text("Resumed at start.")))
    second = start_app(app.data_dir)
    try:
        wait_for(lambda: _caller_done(second, reply.session_id))
        assert second.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (started["taskId"],)) == [("completed",)]
        (content,), = second.sql("SELECT content FROM agent_messages WHERE session_id = ? AND role = 'assistant' "
                                 "ORDER BY sort_order DESC LIMIT 1", (reply.session_id,))
        assert content.endswith("Resumed at start.")
        assert "Deployed before the stop." in _tool_message(fake_model, "inv1")
    finally:
        second.stop()


def test_a_resumed_callee_is_as_deep_in_its_call_chain_as_before_it_paused(
    app: LiveApp, admin: ApiClient, user: ApiClient, guarded_callee: Agents, fake_model: FakeModel,
    invoke_tool: Callable[..., dict[str, Any]],
) -> None:
    """After the approval, the callee's own agent-invoke call back to its caller is a cycle, refused as
    it would have been before the pause (a resumed turn that forgot its chain would run the caller again)."""
    coder = guarded_callee[1]
    asks = invoke_tool(coder, slug="coder-asks")
    links = admin.ok("GET", f"/api/admin/agents/{coder['id']}/tools")["items"]
    attach(admin, coder["id"], *({"toolId": link["toolId"], "needsApproval": link["toolId"] != asks["id"]}
                                 for link in links))
    reply, started = _pause(user, fake_model)
    fake_model.push(callee_step(call("coder-asks", {"agentSlug": "general", "input": "and you?"}, id="back")),
                    callee_step(text("Deployed; I may not ask back.")), caller_step(text("Done.")))
    resumed = post_stream(user, f"/api/agent-sessions/{started['calleeSessionId']}/approvals",
                          {"toolCallId": "g1", "approved": True})
    assert resumed.status == 200, resumed.body
    refused = [c for c in resumed.of("tool-output-error") if c["toolCallId"] == "back"]
    assert refused and "already in this call chain" in refused[0]["errorText"], resumed.types
    wait_for(lambda: _caller_done(app, reply.session_id))
    assert len(requests_of(fake_model, CALLER_PROMPT)) == 2  # the caller ran twice: its turn and its resume


def test_a_callee_that_ends_before_its_callers_turn_is_saved_still_resumes_the_caller(
    app: LiveApp, admin: ApiClient, user: ApiClient, guarded_callee: Agents, fake_model: FakeModel,
) -> None:
    """The caller's step calls the callee and a slow tool side by side: the callee pauses, its approval is
    answered and its turn ends while the caller's turn still runs the slow tool. The callee's end finds the
    caller busy; the caller's own pause, once saved, must resume it with the settled call's result."""
    caller = guarded_callee[0]
    slow = make_tool(admin, "nap", "test-slow")
    links = admin.ok("GET", f"/api/admin/agents/{caller['id']}/tools")["items"]
    attach(admin, caller["id"], *({"toolId": link["toolId"]} for link in links), {"toolId": slow["id"]})
    both = caller_step(call("ask-agent", {"agentSlug": "coder", "input": "deploy it"}, id="inv1"))
    both.tool_calls.append(ToolCall("nap", {"seconds": 3.0}, id="nap1"))
    fake_model.push(both, callee_step(call("guard", {"action": "deploy"}, id="g1")),
                    callee_step(text("Deployed early.")), caller_step(text("Both done.")))
    first: list[Streamed] = []
    running = threading.Thread(target=lambda: first.append(chat(user, "general", "deploy and nap")), daemon=True)
    running.start()
    (task_id, callee_sid), = wait_for(lambda: app.sql(
        "SELECT id, session_id FROM a2a_task_sessions WHERE state = 'input_required'"))
    answered = post_stream(user, f"/api/agent-sessions/{callee_sid}/approvals", {"toolCallId": "g1", "approved": True})
    assert answered.text == "Deployed early.", answered.body
    running.join(timeout=20)
    assert first and first[0].status == 200, first
    assert app.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (task_id,)) == [("completed",)]
    wait_for(lambda: _caller_done(app, first[0].session_id))
    last = user.ok("GET", f"/api/agent-sessions/{first[0].session_id}")["messages"][-1]
    assert last["status"] == "complete" and last["content"].endswith("Both done.")
    assert "Deployed early." in _tool_message(fake_model, "inv1")
