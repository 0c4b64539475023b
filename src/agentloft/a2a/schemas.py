"""Wire shapes of the A2A domain (camelCase JSON, as in seed 003)."""

from __future__ import annotations

from agentloft.core.schemas import ApiModel


class TaskStarted(ApiModel):
    """The ``data-a2a-task-started`` payload the caller's stream carries."""

    task_id: str
    callee_agent_slug: str
    callee_agent_name: str


class NoBuffer(ApiModel):
    """What the panel stream answers when the task has no live buffer (finished long ago, or elsewhere)."""

    active: bool = False
    reason: str = "no-buffer"
