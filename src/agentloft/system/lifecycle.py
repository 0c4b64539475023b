"""Start-up: this process joins the database's list of server processes, or refuses to start when it
must not run beside them (``system.workers``); then it renews its row while it runs. Runs first, before
any other start-up work touches runs a live neighbour owns."""

from __future__ import annotations

import asyncio
import logging

from agentloft.core.runtime import Runtime
from agentloft.system import workers

log = logging.getLogger(__name__)


async def _heartbeats(rt: Runtime, worker_id: str, shared: bool) -> None:
    while True:
        await asyncio.sleep(rt.settings.worker_lease_seconds / 3)
        try:
            async with rt.db.session() as db:
                await workers.beat(db, worker_id=worker_id, shared=shared)
        except Exception as exc:  # the database is down for now: the next beat tries again
            log.warning("worker heartbeat failed: %s", exc)


async def startup(rt: Runtime) -> None:
    # SQLite is for one process whatever else is configured (its read cache trusts that no one else writes)
    worker_id, shared = rt.runs.leases.worker_id, rt.runs.leases.shared and rt.db.dialect != "sqlite"
    async with rt.db.session() as db:
        await workers.register(db, settings=rt.settings, worker_id=worker_id, shared=shared)
    rt.runs.spawn(_heartbeats(rt, worker_id, shared))


async def shutdown(rt: Runtime) -> None:
    try:
        async with rt.db.session() as db:
            await workers.unregister(db, worker_id=rt.runs.leases.worker_id)
    except Exception as exc:  # the row goes stale by itself
        log.warning("could not remove this worker's row: %s", exc)
