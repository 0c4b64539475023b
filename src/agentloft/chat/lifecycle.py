"""Start-up: stream buffers and the run registry; runs a previous process left mid-way are marked
interrupted. Shutdown: running turns are cancelled and saved as interrupted, the model client closed."""

from __future__ import annotations

import logging

from agentloft.chat import service
from agentloft.chat.buffers import BUFFERS_KEY, MemoryStreamBuffers
from agentloft.chat.engine import HTTP_CLIENT_KEY, MODELS_KEY
from agentloft.chat.runs import get_runs
from agentloft.runtime import Runtime

log = logging.getLogger(__name__)


async def startup(rt: Runtime) -> None:
    rt.extras[BUFFERS_KEY] = MemoryStreamBuffers(rt.settings.stream_grace_seconds)
    get_runs(rt)
    async with rt.db.session() as db:
        count = await service.mark_interrupted(db=db)
    if count:
        log.warning("%d replies were cut off by the last shutdown; marked interrupted", count)


async def shutdown(rt: Runtime) -> None:
    await get_runs(rt).shutdown()
    rt.extras.pop(MODELS_KEY, None)
    client = rt.extras.pop(HTTP_CLIENT_KEY, None)
    if client is not None:
        await client.aclose()
