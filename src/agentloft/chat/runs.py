"""Which turns run in this process, so ``stop`` can cancel one and shutdown can interrupt them all.

A run registers the task it runs in (a background task for the chat endpoints, the caller's own task
for A2A). Cancelling that task makes the engine save what was produced and end the stream; the reason
recorded here decides whether the message is ``stopped`` (the user asked) or ``interrupted`` (shutdown).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from dataclasses import dataclass, field
from typing import Any

from agentloft.core.runtime import Runtime


@dataclass
class RunRegistry:
    tasks: dict[str, asyncio.Task[object]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    background: set[asyncio.Task[object]] = field(default_factory=set)
    shutting_down: bool = False

    def enter(self, session_id: str) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks[session_id] = task

    def leave(self, session_id: str) -> None:
        self.tasks.pop(session_id, None)
        self.reasons.pop(session_id, None)

    def is_running(self, session_id: str) -> bool:
        return session_id in self.tasks

    async def stop(self, session_id: str, wait_s: float = 10.0) -> bool:
        """Cancel the session's run and wait until it saved; False when nothing runs here."""
        task = self.tasks.get(session_id)
        if task is None:
            return False
        self.reasons[session_id] = "stopped"
        task.cancel()
        await asyncio.wait([task], timeout=wait_s)
        return True

    def spawn(self, coro: Coroutine[Any, Any, object]) -> asyncio.Task[object]:
        """Start a run in the background, keeping a reference so it is not garbage-collected."""
        task: asyncio.Task[object] = asyncio.create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    async def shutdown(self, wait_s: float = 5.0) -> None:
        self.shutting_down = True
        tasks = list(self.tasks.values()) + list(self.background)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=wait_s)


def current_stop_reason(rt: Runtime, session_id: str) -> str:
    """``stopped`` (the user asked), ``interrupted`` (shutdown) or ``cancelled`` (the caller's own task
    was cancelled, e.g. an A2A timeout; saved like a stop, but the cancellation goes on up)."""
    runs = rt.runs
    if runs.shutting_down:
        return "interrupted"
    return runs.reasons.get(session_id, "cancelled")
