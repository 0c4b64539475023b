"""Chat search leaves A2A out: the callee's session and its messages (``source = 'a2a'``) are never found,
not even when it is made visible in the sidebar; the calling session is found by its own
messages."""

from __future__ import annotations

from tests.a2a.conftest import callee_step, caller_step
from tests.a2a.test_invoke import Agents, ask
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, text
from tests.support import ApiClient, LiveApp


def found(client: ApiClient, q: str) -> list[str]:
    return [s["id"] for s in client.ok("GET", "/api/agent-sessions/search", params={"q": q})["items"]]


def test_a2a_sessions_and_messages_are_not_searched(
    app: LiveApp, user: ApiClient, pair: Agents, fake_model: FakeModel
) -> None:
    fake_model.push(ask("coder", "写一个排序函数 quicksort"),
                    callee_step(text("def 快速排序(xs): return sorted(xs)")),
                    caller_step(text("已完成。")))
    reply = chat(user, "general", "帮我问问编程助手")
    (task_session,), = app.sql("SELECT session_id FROM a2a_task_sessions")
    assert found(user, "编程") == [reply.session_id]  # the caller's own message
    assert found(user, "排序") == [] and found(user, "quicksort") == [] and found(user, "快速") == []
    app.sql("UPDATE agent_sessions SET hidden = false WHERE id = ?", (task_session,))
    assert task_session in [s["id"] for s in user.ok("GET", "/api/agent-sessions")["items"]]
    assert found(user, "排序") == [] and found(user, "写一个") == []
