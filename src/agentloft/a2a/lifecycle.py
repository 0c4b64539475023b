"""A2A start-up and shutdown: the per-agent A2A handlers, and tasks a previous process left running."""

from __future__ import annotations

import logging

from sqlalchemy import select

from agentloft.a2a.models import A2ATaskSession
from agentloft.a2a.server import SERVERS_KEY, A2AServers
from agentloft.runtime import Runtime

log = logging.getLogger(__name__)


async def startup(rt: Runtime) -> None:
    rt.extras[SERVERS_KEY] = A2AServers(rt)
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
    servers = rt.extras.pop(SERVERS_KEY, None)
    if servers is not None:
        await servers.close()
