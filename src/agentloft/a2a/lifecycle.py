"""A2A start-up and shutdown: the agent-invoke tool type registered, tasks a previous process left running
failed; the per-agent handlers closed."""

from __future__ import annotations

import logging

from sqlalchemy import select

from agentloft.a2a import tool
from agentloft.a2a.models import A2ATaskSession
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)


async def startup(rt: Runtime) -> None:
    rt.registry.register(tool.TOOL_TYPE)  # the add-on call: the tool layer never imports a2a
    # A task's run lives in the process that started it (as chat runs do); one still 'working' after a
    # restart will never end, so it is failed, in our state and in the protocol's copy A2A clients read.
    async with rt.db.session() as db:
        stmt = select(A2ATaskSession).where(A2ATaskSession.state.in_(("submitted", "working")))
        rows = list((await db.execute(stmt)).scalars())
        for row in rows:
            row.state = "failed"
            if row.task_data:
                status = dict(row.task_data.get("status") or {})
                status["state"] = "TASK_STATE_FAILED"
                row.task_data = {**row.task_data, "status": status}
    if rows:
        log.warning("%d A2A tasks were cut off by the last shutdown; marked failed", len(rows))


async def shutdown(rt: Runtime) -> None:
    await rt.a2a.close()
