"""Whose an A2A callee's tokens are (issue 33): a task started by one of our agents counts for the user whose
turn called it; a task from an outside A2A client counts for the user its token belongs to. Either way
under ``source = 'a2a'`` and the callee agent, and the budgets of that user hold for the task's turn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.a2a import a2a_client as ac
from tests.a2a.conftest import callee_step, caller_step
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient, LiveApp

Agents = tuple[dict[str, Any], dict[str, Any]]


def records(app: LiveApp) -> list[tuple[Any, ...]]:
    return app.sql("SELECT u.username, r.agent_id, r.source, r.input_tokens, r.output_tokens FROM usage_records r "
                   "JOIN users u ON u.id = r.user_id ORDER BY r.id")


def test_an_invoked_callee_counts_for_the_calling_user(
    app: LiveApp, user: ApiClient, pair: Agents, fake_model: FakeModel
) -> None:
    caller, callee = pair
    fake_model.push(caller_step(call("ask-agent", {"agentSlug": "coder", "input": "add()"}, input_tokens=10,
                                     output_tokens=2)),
                    callee_step(text("def add(a, b): return a + b", input_tokens=30, output_tokens=9)),
                    caller_step(text("done", input_tokens=50, output_tokens=1)))
    assert chat(user, "general", "get me add()").text == "done"
    assert records(app) == [("alice", callee["id"], "a2a", 30, 9), ("alice", caller["id"], "chat", 60, 3)]


def test_an_outside_a2a_client_counts_for_its_tokens_user_and_is_held_by_their_budget(
    app: LiveApp, admin: ApiClient, user: ApiClient, token: str, make_agent: Callable[..., dict[str, Any]],
    fake_model: FakeModel,
) -> None:
    callee = make_agent("coder", "You are the coding assistant.", a2aCallable=True)
    fake_model.push(text("hello", input_tokens=12, output_tokens=4))
    events = ac.run(ac.stream(app.url, "coder", token, "hi"))
    assert "".join(ac.artifact_text(events)) == "hello"
    assert records(app) == [("alice", callee["id"], "a2a", 12, 4)]
    alice = app.sql("SELECT id FROM users WHERE username = 'alice'")[0][0]
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice, "period": "day",
                                                 "maxTokens": 16})
    refused = ac.run(ac.stream(app.url, "coder", token, "again"))
    assert len(fake_model.requests) == 1, "no model call for a user over budget"
    assert "day budget of 16 tokens is used up" in str(refused)
