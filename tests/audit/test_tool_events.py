"""A turn's tool calls are recorded with the turn's save (``tool.call``: outcome, duration, arguments only
for a tool marked ``auditArguments``), and an approval's answer with who gave it (``tool.approval``)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.audit.test_events import of_type
from tests.chat.helpers import attach, chat, make_agent, make_tool, post_stream, register_test_tools
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.support import ApiClient, LiveApp


@pytest.fixture
def agent(app: LiveApp, admin: ApiClient, model_id: int) -> dict[str, Any]:
    register_test_tools(app)
    return make_agent(admin, "helper", modelId=model_id, maxSteps=5)


def test_tool_calls_are_recorded_with_the_turn(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    echo = make_tool(admin, "echo", "test-echo", auditArguments=True)
    boom = make_tool(admin, "boom", "test-fail")
    attach(admin, agent["id"], {"toolId": echo["id"], "position": 0}, {"toolId": boom["id"], "position": 1})
    fake_model.push(
        Step(tool_calls=[ToolCall("echo", {"text": "hi", "apiKey": "sk-x"}, id="c1"),
                         ToolCall("boom", {"text": "secret words"}, id="c2")]),
        text("Done."),
    )
    res = chat(user, "helper", "use your tools")
    calls = {e["detail"]["toolCallId"]: e for e in of_type(admin, "tool.call")}
    assert set(calls) == {"c1", "c2"}
    ok, failed = calls["c1"], calls["c2"]
    assert ok["actorId"] == 2 and ok["target"] == "tool:echo"
    assert {"tool": "echo", "agentId": agent["id"], "sessionId": res.session_id, "outcome": "success"}.items() \
        <= ok["detail"].items()
    assert ok["detail"]["arguments"] == {"text": "hi", "apiKey": "[redacted]"}
    assert isinstance(ok["detail"]["durationMs"], int)
    assert failed["detail"]["outcome"] == "failed" and failed["detail"]["code"] == "tool_crashed"
    assert failed["detail"]["argumentNames"] == ["text"] and "arguments" not in failed["detail"]
    assert "secret words" not in admin.get("/api/admin/audit.jsonl").text


def test_an_approval_is_recorded_with_who_answered(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    guard = make_tool(admin, "guard", "test-guarded")
    attach(admin, agent["id"], {"toolId": guard["id"], "position": 0, "needsApproval": True})
    fake_model.push(Step(tool_calls=[ToolCall("guard", {"action": "read"}, id="a1")]))
    sid = chat(user, "helper", "please act").session_id
    assert of_type(admin, "tool.call") == []  # nothing ran yet
    fake_model.push(text("Not done."))
    post_stream(user, f"/api/agent-sessions/{sid}/approvals",
                {"toolCallId": "a1", "approved": False, "reason": "not today"})
    answers = of_type(admin, "tool.approval")
    assert [(e["actorName"], e["detail"]["decision"], e["detail"]["reason"], e["detail"]["tool"]) for e in answers] \
        == [("alice", "rejected", "not today", "guard")]
    again = user.post(f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "a1", "approved": True})
    assert again.status_code == 409 and len(of_type(admin, "tool.approval")) == 1
