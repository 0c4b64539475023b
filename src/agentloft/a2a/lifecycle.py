"""A2A start-up and shutdown: the per-agent A2A handlers, and tasks a previous process left running."""

from __future__ import annotations

from sqlalchemy import update

from agentloft.a2a.models import A2ATaskSession
from agentloft.a2a.server import SERVERS_KEY, A2AServers
from agentloft.db import utcnow
from agentloft.runtime import Runtime


async def startup(rt: Runtime) -> None:
    rt.extras[SERVERS_KEY] = A2AServers(rt)
    # A task's run lives in the process that started it; one still 'working' after a restart never ends.
    async with rt.db.session() as db:
        await db.execute(
            update(A2ATaskSession)
            .where(A2ATaskSession.state.in_(("submitted", "working")))
            .values(state="failed", updated_at=utcnow())
        )


async def shutdown(rt: Runtime) -> None:
    servers = rt.extras.pop(SERVERS_KEY, None)
    if servers is not None:
        await servers.close()
