"""``a2a.tasks`` is the one vocabulary of task states: the remote agent's client and the A2A server read
the protocol's states through it, and a call to a remote agent ends as a typed ``TaskOutcome``."""

from __future__ import annotations

from typing import Any, cast

import pytest
from a2a.types import TaskState

from agentloft.a2a import remote, tasks
from agentloft.a2a.models import A2ATaskSession


def test_every_protocol_state_has_a_row_name_that_fits_the_row() -> None:
    width = cast(Any, A2ATaskSession.__table__.c.state.type).length
    names = {tasks.state_name(v) for v in TaskState.values()}
    assert {tasks.SUBMITTED, tasks.WORKING, *tasks.TERMINAL_STATES} <= names
    assert {tasks.state_name(s) for s in tasks.TERMINAL} == tasks.TERMINAL_STATES
    assert max(len(n) for n in names) <= width
    assert tasks.ENDING == tasks.TERMINAL | tasks.WAITING and not tasks.TERMINAL & tasks.WAITING


def _panel(reply: str) -> Any:
    panel = remote._Panel(rt=cast(Any, None), key="k", message_id="m", max_chars=100)
    panel.parts.append(reply)
    return panel


@pytest.mark.parametrize(("state", "status", "ending", "error"), [
    (TaskState.TASK_STATE_COMPLETED, "", "completed", None),
    (TaskState.TASK_STATE_INPUT_REQUIRED, "which city?", "failed", "the remote agent asks for more input: which city?"),
    (TaskState.TASK_STATE_AUTH_REQUIRED, "", "failed", "the remote agent asks for authorization"),
    (TaskState.TASK_STATE_CANCELED, "", "canceled", "the remote task ended canceled"),
    (TaskState.TASK_STATE_REJECTED, "not mine to do", "failed", "not mine to do"),
    (TaskState.TASK_STATE_WORKING, "", "failed", "the remote agent's stream ended before its task did"),
])
def test_a_remote_task_ends_as_a_typed_outcome(state: int, status: str, ending: str, error: str | None) -> None:
    progress = remote._Progress(state=state, status_text=status)
    outcome = remote._outcome("t1", progress, _panel("so far"))
    assert outcome == tasks.TaskOutcome(task_id="t1", state=cast(Any, ending), text="so far", error=error)
