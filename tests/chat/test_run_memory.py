"""A finished turn leaves nothing of its run behind: after a burst of chats the process must give its
memory back, and a pydantic-ai run holds the whole conversation, its tools and their state.

The live server runs in this process, so the test can look for the run's own toolset (``RunToolset``,
created per turn) among the live objects once the turn has ended."""

from __future__ import annotations

import gc
from typing import Any

from agentloft.chat.toolset import RunToolset
from tests.chat.helpers import attach, chat, make_tool, wait_for
from tests.support import ApiClient


def _toolsets_of(session_id: str) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, RunToolset) and o._scope.session_id == session_id)


def test_a_finished_turn_keeps_no_run_state(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], test_tools: None
) -> None:
    tool = make_tool(admin, "echo_tool", "test-echo")
    attach(admin, agent["id"], {"toolId": tool["id"]})
    first = chat(user, "helper", "hello")  # opens the model connection the next turns reuse
    second = chat(user, "helper", "again", session_id=first.session_id)
    assert first.text and second.text
    assert first.session_id is not None
    # the turn's own objects go once its background task has saved it (the response ends before that)
    wait_for(lambda: _toolsets_of(first.session_id or "") == 0, timeout=10)
