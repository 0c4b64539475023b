"""Wire shapes of the A2A domain (camelCase JSON, as in seed 003)."""

from __future__ import annotations

from pydantic import Field

from agentloft.chat.schemas import MAX_MESSAGE_CHARS
from agentloft.core.schemas import ApiModel


class TaskStarted(ApiModel):
    """The ``data-a2a-task-started`` payload the caller's stream carries."""

    task_id: str
    callee_agent_slug: str
    callee_agent_name: str
    callee_session_id: str | None = None  # the panel answers the callee's approvals in that session


class TaskInput(ApiModel):
    """The calling user's answer to a remote agent's task that asks for input."""

    message: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


class NoBuffer(ApiModel):
    """What the panel stream answers when the task has no live buffer (finished long ago, or elsewhere)."""

    active: bool = False
    reason: str = "no-buffer"
