"""Start-up: runs a previous process left mid-way are marked interrupted. Shutdown: running turns are
cancelled and saved as interrupted, the model clients closed."""

from __future__ import annotations

import logging

from agentloft.chat import service
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)


async def startup(rt: Runtime) -> None:
    async with rt.db.session() as db:
        count = await service.mark_interrupted(db=db)
    if count:
        log.warning("%d replies were cut off by the last shutdown; marked interrupted", count)


async def shutdown(rt: Runtime) -> None:
    await rt.runs.shutdown()
    await rt.models.aclose()
