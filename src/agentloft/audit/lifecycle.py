"""Start-up: every server process deletes audit events older than ``AGENTLOFT_AUDIT_RETENTION_DAYS``
about once an hour (and once at start). Several processes doing it at once is harmless: ``service.purge``
takes the chain head's lock, so they run one after another and the later ones find nothing to delete."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta

from agentloft.audit import service
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

PURGE_EVERY_S = 3600.0


async def purge_once(rt: Runtime) -> int:
    """Delete what retention no longer keeps; how many events went (0 when retention is off)."""
    days = rt.settings.audit_retention_days
    if days <= 0:
        return 0
    async with rt.db.session() as db:
        return await service.purge(db=db, older_than=timedelta(days=days))


async def _retention(rt: Runtime) -> None:
    while True:
        try:
            if deleted := await purge_once(rt):
                log.info("audit retention deleted %d events", deleted)
        except Exception as exc:  # the database is down for now: the next round tries again
            log.warning("audit retention failed: %s", exc)
        await asyncio.sleep(PURGE_EVERY_S)


async def startup(rt: Runtime) -> None:
    rt.runs.spawn(_retention(rt))
