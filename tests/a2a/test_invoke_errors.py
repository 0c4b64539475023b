"""agent-invoke failures (seed 003, 3.4): each ends in a failed tool result and the caller's run goes on;
a call that cannot start opens no panel; a call that fails while running tells its panel why."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step
from tests.a2a.test_invoke import Agents, ask, panel, requests_of, tool_output
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, Step, call, text
from tests.support import ApiClient, LiveApp


def failed_output(output: dict[str, Any]) -> str:
    """The error text of a failed call (the engine sends failed results as ``tool-output-error``)."""
    assert output["type"] == "tool-output-error", output
    return output["errorText"]


def tool_messages(fake_model: FakeModel, prompt: str) -> str:
    """What the tool results sent back to the model of this agent say."""
    return json.dumps([m for r in requests_of(fake_model, prompt) for m in r["messages"] if m["role"] == "tool"])


@pytest.mark.parametrize("case", ["unknown", "disabled", "not-callable", "not-allowed"])
def test_call_that_cannot_start(
    case: str, app: LiveApp, admin: ApiClient, user: ApiClient, make_agent: Callable[..., dict[str, Any]],
    invoke_tool: Callable[..., dict[str, Any]], fake_model: FakeModel,
) -> None:
    caller = make_agent("general", CALLER_PROMPT)
    make_agent("coder", CALLEE_PROMPT, a2aCallable=case != "not-callable", enabled=case != "disabled")
    invoke_tool(caller, **({"allowedAgents": ["someone-else"]} if case == "not-allowed" else {}))
    slug = "ghost" if case == "unknown" else "coder"
    fake_model.push(ask(slug, "q"), caller_step(text("I could not reach it.")))
    reply = chat(user, "general", "go")
    assert reply.status == 200
    failed_output(tool_output(reply))
    assert not reply.of("data-a2a-task-started"), "no panel opens"
    assert reply.text == "I could not reach it."
    assert app.sql("SELECT COUNT(*) FROM a2a_task_sessions") == [(0,)]
    assert not requests_of(fake_model, CALLEE_PROMPT)


def test_timeout(app: LiveApp, user: ApiClient, make_agent: Callable[..., dict[str, Any]],
                 invoke_tool: Callable[..., dict[str, Any]], fake_model: FakeModel) -> None:
    caller = make_agent("general", CALLER_PROMPT)
    make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    invoke_tool(caller, timeoutMs=1000)
    fake_model.push(ask("coder", "q"), callee_step(Step(text="too late " * 50, delay=0.1)),
                    caller_step(text("It timed out.")))
    reply = chat(user, "general", "go")
    assert "did not answer within 1 s" in failed_output(tool_output(reply))
    task_id = reply.of("data-a2a-task-started")[0]["data"]["taskId"]
    assert reply.text == "It timed out."
    errors = [c for c in panel(user, task_id) if isinstance(c, dict) and c["type"] == "error"]
    assert errors and "did not answer within 1 s" in errors[0]["errorText"]
    assert app.sql("SELECT state FROM a2a_task_sessions") == [("failed",)]
    (status,), = app.sql("SELECT status FROM agent_messages WHERE source = 'a2a' AND role = 'assistant'")
    assert status != "streaming"


def test_callee_model_error(app: LiveApp, user: ApiClient, pair: Agents, fake_model: FakeModel) -> None:
    fake_model.push(ask("coder", "q"), callee_step(Step(error_status=400, error_message="model exploded")),
                    caller_step(text("The coder failed.")))
    reply = chat(user, "general", "go")
    failed_output(tool_output(reply))
    task_id = reply.of("data-a2a-task-started")[0]["data"]["taskId"]
    assert reply.text == "The coder failed."
    chunks = panel(user, task_id)
    errors = [c for c in chunks if isinstance(c, dict) and c["type"] == "error"]
    assert errors and "model exploded" in errors[0]["errorText"]
    assert app.sql("SELECT state FROM a2a_task_sessions") == [("failed",)]


def test_recursion_limit(app: LiveApp, user: ApiClient, make_agent: Callable[..., dict[str, Any]],
                         invoke_tool: Callable[..., dict[str, Any]], fake_model: FakeModel) -> None:
    """general → coder is depth 1; coder → helper would be depth 2 > maxRecursionDepth 1."""
    caller = make_agent("general", CALLER_PROMPT)
    coder = make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    make_agent("helper", "You are the helper.", a2aCallable=True)
    invoke_tool(caller, maxRecursionDepth=1)
    invoke_tool(coder, slug="ask-deeper", maxRecursionDepth=1)
    fake_model.push(ask("coder", "q"),
                    callee_step(call("ask-deeper", {"agentSlug": "helper", "input": "deeper"})),
                    callee_step(text("I answer myself.")),
                    caller_step(text("ok")))
    reply = chat(user, "general", "go")
    assert "I answer myself." in json.dumps(tool_output(reply)["output"]), "the callee's own run went on"
    assert "exceeds the limit of 1" in tool_messages(fake_model, CALLEE_PROMPT)
    assert app.sql("SELECT COUNT(*) FROM a2a_task_sessions") == [(1,)]
    assert not requests_of(fake_model, "You are the helper.")


def test_cycle(app: LiveApp, user: ApiClient, make_agent: Callable[..., dict[str, Any]],
               invoke_tool: Callable[..., dict[str, Any]], fake_model: FakeModel) -> None:
    """general → coder → general is refused even though the depth limit (3) would allow it."""
    caller = make_agent("general", CALLER_PROMPT, a2aCallable=True)
    coder = make_agent("coder", CALLEE_PROMPT, a2aCallable=True)
    invoke_tool(caller)
    invoke_tool(coder, slug="ask-back")
    fake_model.push(ask("coder", "q"),
                    callee_step(call("ask-back", {"agentSlug": "general", "input": "back to you"})),
                    callee_step(text("Fine, my own answer.")),
                    caller_step(text("ok")))
    reply = chat(user, "general", "go")
    assert "Fine, my own answer." in json.dumps(tool_output(reply)["output"])
    assert "cycle" in tool_messages(fake_model, CALLEE_PROMPT)
    assert app.sql("SELECT COUNT(*) FROM a2a_task_sessions") == [(1,)]
    assert reply.text == "ok"


def test_callee_runs_as_calling_user(
    app: LiveApp, admin: ApiClient, user: ApiClient, pair: Agents, fake_model: FakeModel
) -> None:
    """Tools hidden from the calling user's role stay hidden from the callee."""
    _, callee = pair
    for slug, admin_only in (("calc-public", False), ("calc-admin", True)):
        tool = admin.ok("POST", "/api/agent-tools", json={"slug": slug, "name": slug, "type": "calculator",
                                                          "adminOnly": admin_only})
        links = admin.ok("GET", f"/api/admin/agents/{callee['id']}/tools")["items"]
        admin.ok("PUT", f"/api/admin/agents/{callee['id']}/tools",
                 json=[{"toolId": link["toolId"]} for link in links] + [{"toolId": tool["id"]}])
    fake_model.push(ask("coder", "q"), callee_step(text("a")), caller_step(text("ok")))
    chat(user, "general", "go")
    fake_model.push(ask("coder", "q"), callee_step(text("a")), caller_step(text("ok")))
    chat(admin, "general", "go")
    names = [[t["function"]["name"] for t in r.get("tools", [])] for r in requests_of(fake_model, CALLEE_PROMPT)]
    assert names[0] == ["calc-public"]
    assert sorted(names[1]) == ["calc-admin", "calc-public"]
