"""Multi-step tool runs, data chunks from tools, and approvals (pause, answer, resume, restart)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.chat.helpers import GuardedTool, attach, chat, make_tool, parse_sse, post_stream, session_status, text_of
from tests.fakes.openai_server import FakeModel, Step, ToolCall, call, text
from tests.support import ApiClient, LiveApp, login, start_app


def _wire(admin: ApiClient, agent: dict[str, Any], *tools: tuple[str, str, dict[str, Any]]) -> None:
    links = []
    for i, (slug, type_, link) in enumerate(tools):
        tool = make_tool(admin, slug, type_)
        links.append({"toolId": tool["id"], "position": i, **link})
    attach(admin, agent["id"], *links)


def test_tool_loop_streams_calls_results_and_final_text(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    _wire(admin, agent, ("echo", "test-echo", {}), ("boom", "test-fail", {}), ("slow", "test-slow", {}))
    fake_model.push(
        Step(text="Checking.", tool_calls=[ToolCall("echo", {"text": "hi"}, id="c1"),
                                           ToolCall("boom", {"text": "x"}, id="c2")], input_tokens=5,
             output_tokens=3),
        call("slow", {"seconds": 0.05}, id="c3", input_tokens=7, output_tokens=2),
        call("echo", {"wrong": 1}, id="c4", input_tokens=1, output_tokens=1),
        text("All done.", input_tokens=11, output_tokens=4),
    )
    res = chat(user, "helper", "use your tools")
    assert res.types.count("start-step") == 4
    starts = {c["toolCallId"]: c["toolName"] for c in res.of("tool-input-start")}
    assert starts == {"c1": "echo", "c2": "boom", "c3": "slow", "c4": "echo"}
    inputs = {c["toolCallId"]: c["input"] for c in res.of("tool-input-available")}
    assert inputs["c1"] == {"text": "hi"}
    outputs = {c["toolCallId"]: c["output"] for c in res.of("tool-output-available")}
    assert outputs["c1"]["success"] is True and outputs["c1"]["data"]["echo"] == "hi"
    assert outputs["c1"]["data"]["sessionId"] == res.session_id
    assert "durationMs" in outputs["c1"]["metadata"]
    errors = {c["toolCallId"]: c["errorText"] for c in res.of("tool-output-error")}
    assert "broken on x" in errors["c2"]
    assert "invalid input" in errors["c4"] and "text" in errors["c4"]
    assert res.of("data-test-progress") == [{"type": "data-test-progress", "data": {"sleeping": 0.05}}]
    assert res.text == "Checking.All done."
    # the model got the tool results back
    tool_msgs = [m for m in fake_model.requests[1]["messages"] if m["role"] == "tool"]
    assert {m["tool_call_id"] for m in tool_msgs} == {"c1", "c2"}

    detail = user.ok("GET", f"/api/agent-sessions/{res.session_id}")
    reply = detail["messages"][-1]
    assert reply["content"] == "Checking.\n\nAll done." and reply["status"] == "complete"
    assert (reply["inputTokens"], reply["outputTokens"]) == (24, 10)  # summed over the four steps
    tools = {p["toolCallId"]: p for p in reply["parts"] if p["type"].startswith("tool-")}
    assert tools["c1"]["type"] == "tool-echo" and tools["c1"]["state"] == "output-available"
    assert tools["c2"]["state"] == "output-error" and "broken" in tools["c2"]["errorText"]
    assert {"type": "data-test-progress", "data": {"sleeping": 0.05}} in reply["parts"]


def test_max_steps_ends_with_a_note_not_a_crash(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"maxSteps": 2})
    _wire(admin, agent, ("echo", "test-echo", {}))
    fake_model.push(call("echo", {"text": "1"}), call("echo", {"text": "2"}), call("echo", {"text": "3"}))
    res = chat(user, "helper", "loop forever")
    notes = res.of("data-notice")
    assert notes and notes[0]["data"]["code"] == "max_steps" and "2 steps" in notes[0]["data"]["message"]
    assert notes[0]["data"]["steps"] == 2  # for the page to word it
    assert "error" not in res.types and res.types[-1] == "[DONE]"
    assert len(fake_model.requests) == 2
    assert session_status(app, res.session_id) == "idle"
    reply = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][-1]
    assert reply["status"] == "complete" and reply["parts"][-1]["type"] == "data-notice"
    fake_model.push(text("continuing"))
    assert chat(user, "helper", "go on", session_id=res.session_id).text == "continuing"


def _pause(user: ApiClient, fake_model: FakeModel, args: dict[str, Any], call_id: str = "ap1") -> Any:
    fake_model.push(Step(text="Let me do that.", tool_calls=[ToolCall("guard", args, id=call_id)],
                         input_tokens=10, output_tokens=5))
    return chat(user, "helper", "please act")


def test_tool_needing_approval_pauses_then_approve_runs_it(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    _wire(admin, agent, ("guard", "test-guarded", {"needsApproval": True}))
    res = _pause(user, fake_model, {"action": "read"})
    sid = res.session_id
    assert res.of("tool-approval-request") == [{"type": "tool-approval-request", "approvalId": "ap1",
                                                "toolCallId": "ap1"}]
    assert res.types[-1] == "[DONE]" and not res.of("tool-output-available")
    assert session_status(app, sid) == "awaiting_approval"
    detail = user.ok("GET", f"/api/agent-sessions/{sid}")
    assert detail["pendingApprovals"] == [{"toolCallId": "ap1", "toolName": "guard", "input": {"action": "read"},
                                         "approverGroups": []}]
    assert detail["messages"][-1]["status"] == "awaiting_approval"
    # a new message while the approval waits is refused
    busy = user.post("/api/agents/helper/chat", json={"message": "hello?", "sessionId": sid})
    assert busy.status_code == 409 and busy.json()["error"]["code"] == "approval_pending"

    fake_model.push(text("Done, it worked.", input_tokens=20, output_tokens=6))
    resumed = post_stream(user, f"/api/agent-sessions/{sid}/approvals", {"toolCallId": "ap1", "approved": True})
    assert resumed.status == 200 and resumed.headers["x-vercel-ai-ui-message-stream"] == "v1"
    out = resumed.of("tool-output-available")
    assert out and out[0]["toolCallId"] == "ap1" and out[0]["output"]["data"] == {"did": "read", "approved": True}
    assert resumed.text == "Done, it worked."
    assert resumed.chunks[0]["messageId"] == res.chunks[0]["messageId"]  # same assistant message continues

    again = user.post(f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "ap1", "approved": False})
    assert again.status_code == 409 and again.json()["error"]["code"] == "approval_answered"
    unknown = user.post(f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "zz", "approved": True})
    assert unknown.status_code == 404

    reply = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"][-1]
    assert reply["status"] == "complete" and reply["content"] == "Let me do that.\n\nDone, it worked."
    assert (reply["inputTokens"], reply["outputTokens"]) == (30, 11)  # summed across the resumed run
    part = next(p for p in reply["parts"] if p.get("toolCallId") == "ap1")
    assert part["state"] == "output-available" and part["approval"]["approved"] is True
    assert session_status(app, sid) == "idle"


def test_a_resumed_reply_is_saved_with_its_answers_from_its_start(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    """A page opened while a resumed reply streams shows the saved reply up to the last answered call and
    replays the rest (chat.js ``beforeRun``): the answers must be saved when the run starts, not with its
    first checkpoint a second later."""
    _wire(admin, agent, ("guard", "test-guarded", {"needsApproval": True}))
    sid = _pause(user, fake_model, {"action": "read"}).session_id
    fake_model.push(Step(text="Done, it worked.", first_delay=1.5))
    with user.stream("POST", f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "ap1",
                                                                         "approved": True}) as resp:
        lines = resp.iter_lines()
        next(line for line in lines if line.startswith("data:"))  # the resumed run has started
        reply = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"][-1]
        assert reply["status"] == "streaming"
        part = next(p for p in reply["parts"] if p.get("toolCallId") == "ap1")
        assert part["approval"] == {"id": "ap1", "approved": True}
        assert [line for line in lines if line][-1] == "data: [DONE]"


def test_rejection_tells_the_model_with_the_reason(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    _wire(admin, agent, ("guard", "test-guarded", {}))  # the type asks for "delete" only
    fake_model.push(call("guard", {"action": "read"}, id="r0"))
    first = _pause(user, fake_model, {"action": "delete"}, call_id="r1")
    assert [c["toolCallId"] for c in first.of("tool-output-available")] == ["r0"]
    assert [c["toolCallId"] for c in first.of("tool-approval-request")] == ["r1"]
    fake_model.push(text("Understood, I will not delete it."))
    resumed = post_stream(user, f"/api/agent-sessions/{first.session_id}/approvals",
                          {"toolCallId": "r1", "approved": False, "reason": "keep my files"})
    assert resumed.of("tool-output-denied") == [{"type": "tool-output-denied", "toolCallId": "r1"}]
    tool_msg = next(m for m in fake_model.requests[-1]["messages"] if m.get("tool_call_id") == "r1")
    assert "declined" in tool_msg["content"] and "keep my files" in tool_msg["content"]
    reply = user.ok("GET", f"/api/agent-sessions/{first.session_id}")["messages"][-1]
    part = next(p for p in reply["parts"] if p.get("toolCallId") == "r1")
    assert part["state"] == "output-denied" and part["approval"] == {"id": "r1", "approved": False,
                                                                     "reason": "keep my files"}


def test_agent_link_can_waive_the_tools_approval(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel, test_tools: None,
) -> None:
    tool = make_tool(admin, "echo", "test-echo", needsApproval=True)
    attach(admin, agent["id"], {"toolId": tool["id"], "needsApproval": False})
    fake_model.push(call("echo", {"text": "free"}), text("ok"))
    res = chat(user, "helper", "go")
    assert not res.of("tool-approval-request") and res.of("tool-output-available")


def test_several_pending_calls_resume_after_the_last_answer(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    _wire(admin, agent, ("guard", "test-guarded", {"needsApproval": True}))
    fake_model.push(Step(tool_calls=[ToolCall("guard", {"action": "a"}, id="m1"),
                                     ToolCall("guard", {"action": "b"}, id="m2")]))
    res = chat(user, "helper", "two things")
    assert {c["toolCallId"] for c in res.of("tool-approval-request")} == {"m1", "m2"}
    waiting = user.post(f"/api/agent-sessions/{res.session_id}/approvals", json={"toolCallId": "m1",
                                                                                 "approved": True})
    assert waiting.status_code == 202 and waiting.json() == {"waitingFor": ["m2"]}
    fake_model.push(text("both handled"))
    resumed = post_stream(user, f"/api/agent-sessions/{res.session_id}/approvals",
                          {"toolCallId": "m2", "approved": False})
    assert resumed.text == "both handled"
    assert [c["toolCallId"] for c in resumed.of("tool-output-available")] == ["m1"]
    assert [c["toolCallId"] for c in resumed.of("tool-output-denied")] == ["m2"]


def test_an_answer_waits_while_the_agent_is_disabled(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    """An answer the run could not resume on is refused before it is recorded: the call stays pending."""
    _wire(admin, agent, ("guard", "test-guarded", {"needsApproval": True}))
    sid = _pause(user, fake_model, {"action": "x"}).session_id
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"enabled": False})
    r = user.post(f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "ap1", "approved": True})
    assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"
    assert app.sql("SELECT status FROM chat_approvals WHERE session_id = ?", (sid,)) == [("pending",)]
    assert app.sql("SELECT COUNT(*) FROM audit_events WHERE type = 'tool.approval'") == [(0,)]
    assert session_status(app, sid) == "awaiting_approval"
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"enabled": True})
    fake_model.push(text("fine"))
    assert post_stream(user, f"/api/agent-sessions/{sid}/approvals",
                       {"toolCallId": "ap1", "approved": True}).text == "fine"


def test_only_the_owner_may_answer(
    user: ApiClient, make_user: Any, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    _wire(admin, agent, ("guard", "test-guarded", {"needsApproval": True}))
    res = _pause(user, fake_model, {"action": "x"})
    mallory = make_user("mallory")
    for client in (mallory, admin):
        r = client.post(f"/api/agent-sessions/{res.session_id}/approvals", json={"toolCallId": "ap1",
                                                                                 "approved": True})
        assert r.status_code == 404
    fake_model.push(text("fine"))
    assert post_stream(user, f"/api/agent-sessions/{res.session_id}/approvals",
                       {"toolCallId": "ap1", "approved": True}).text == "fine"


def test_pending_approval_survives_a_server_restart(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None, tmp_path: Path,
) -> None:
    _wire(admin, agent, ("guard", "test-guarded", {"needsApproval": True}))
    res = _pause(user, fake_model, {"action": "survive"})
    app.stop()
    second = start_app(app.data_dir)
    try:
        from tests.chat.helpers import register_test_tools

        register_test_tools(second)
        with second.client() as alice:
            login(alice, "alice")
            assert alice.ok("GET", f"/api/agent-sessions/{res.session_id}")["pendingApprovals"][0]["toolCallId"] \
                == "ap1"
            fake_model.push(text("after restart"))
            resp = alice.post(f"/api/agent-sessions/{res.session_id}/approvals",
                              json={"toolCallId": "ap1", "approved": True})
            chunks = parse_sse(resp.text)
            out = [c for c in chunks if isinstance(c, dict) and c["type"] == "tool-output-available"]
            assert out[0]["output"]["data"] == {"did": "survive", "approved": True}
            assert text_of(chunks) == "after restart"
    finally:
        second.stop()


def test_the_finish_chunk_comes_after_the_turn_is_saved(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    """A client acts on ``finish`` at once (answers the approval, sends the next message): by the time it
    sees that chunk, the pending approval and the session's state must already be stored."""
    _wire(admin, agent, ("guard", "test-guarded", {"needsApproval": True}))
    fake_model.push(call("guard", {"action": "now"}, id="f1"))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "go"}) as resp:
        session_id = resp.headers["x-session-id"]
        for line in resp.iter_lines():
            if line.startswith("data: {") and '"type":"finish"' in line.replace(" ", ""):
                # read the database before the rest of the stream: the save must be done already
                assert session_status(app, session_id) == "awaiting_approval"
                pending = app.sql("SELECT tool_call_id, status FROM chat_approvals WHERE session_id = ?",
                                  (session_id,))
                assert pending == [("f1", "pending")]
                break
        else:
            raise AssertionError("no finish chunk")


def _tool_messages_answer_every_call(messages: list[dict[str, Any]]) -> bool:
    """The OpenAI rule: an assistant message with tool calls is followed by a tool message per call."""
    for i, message in enumerate(messages):
        calls = [c["id"] for c in message.get("tool_calls") or []]
        answered = {m.get("tool_call_id") for m in messages[i + 1:i + 1 + len(calls)] if m.get("role") == "tool"}
        if set(calls) - answered:
            return False
    return True


def test_a_stop_during_a_tool_call_leaves_a_history_the_model_accepts(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    """Stopped while a tool runs: the saved history answers that call (as stopped), so the next turn's
    request is one an OpenAI-compatible server accepts."""
    _wire(admin, agent, ("slow", "test-slow", {}))
    fake_model.push(call("slow", {"seconds": 30}, id="s1"))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "sleep"}) as resp:
        sid = resp.headers["x-session-id"]
        for line in resp.iter_lines():
            if "tool-input-available" in line:
                assert user.ok("POST", f"/api/agent-sessions/{sid}/stop") == {"stopped": True}
    assert session_status(app, sid) == "idle"
    fake_model.push(text("Fine."))
    assert chat(user, "helper", "never mind", session_id=sid).text == "Fine."
    messages = fake_model.requests[-1]["messages"]
    assert any(m.get("tool_calls") for m in messages)
    assert _tool_messages_answer_every_call(messages), messages


def test_a_calls_input_is_validated_once(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    """The approval check (the type asks per input) and the run read the same parsed input."""
    _wire(admin, agent, ("guard", "test-guarded", {}))
    GuardedTool.parsed.clear()
    fake_model.push(call("guard", {"action": "read"}, id="g1"), text("Done."))
    res = chat(user, "helper", "read it")
    outputs = {c["toolCallId"]: c["output"] for c in res.of("tool-output-available")}
    assert outputs["g1"]["data"] == {"did": "read", "approved": False}
    assert GuardedTool.parsed == [{"action": "read"}]
