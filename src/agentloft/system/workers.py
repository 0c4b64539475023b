"""Which server processes serve this database: one ``worker_processes`` row each, renewed by a heartbeat.

Why: a process without a shared Redis keeps stream buffers, run ownership and login counts in its own
memory, and with SQLite also caches reads it assumes nobody else changes. A second such process on the
same database would resume, stop and sweep runs it cannot see and serve stale reads. So a process
refuses to start next to a live one unless both share a Redis (``AGENTLOFT_REDIS_URL``); rows whose
heartbeat is old, or whose process is gone from this very host, do not count.

The check and the insert run in one transaction that writes first (a lock on PostgreSQL, SQLite's write
lock), so two processes starting at the same moment cannot both pass.
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

from sqlalchemy import delete, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.db import rows_matched, utcnow
from agentloft.core.settings import ConfigError, Settings
from agentloft.system.models import WorkerProcess

# pg_advisory_xact_lock key: "agentloft workers" (any fixed 64-bit number; the upgrade lock uses another)
_LOCK_KEY = 0x61676C6F_776B7273
ALONE_HINT = (
    "Several server processes on one database need PostgreSQL and a Redis they share: set "
    "AGENTLOFT_DATABASE_URL=postgresql+asyncpg://… and AGENTLOFT_REDIS_URL=redis://… on every one of them"
)


def _stale_after(settings: Settings) -> timedelta:
    return timedelta(seconds=settings.worker_lease_seconds * 2)


# The rows this process added (several apps may run in one process, as in the tests).
_OURS: set[str] = set()


def _gone(row: WorkerProcess) -> bool:
    """A process of this host that no longer exists (a restart right after a crash need not wait)."""
    if row.host != socket.gethostname():
        return False
    if row.pid == os.getpid():  # our pid but not our row: an earlier life of a container's pid 1
        return row.id not in _OURS
    try:
        os.kill(row.pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


async def _lock(db: AsyncSession) -> None:
    if db.get_bind().dialect.name == "postgresql":
        await db.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _LOCK_KEY})


async def _others(db: AsyncSession, settings: Settings) -> list[WorkerProcess]:
    """Live processes on this database (after dropping the rows of dead ones)."""
    await db.execute(delete(WorkerProcess).where(WorkerProcess.heartbeat_at < utcnow() - _stale_after(settings)))
    rows = list((await db.execute(select(WorkerProcess))).scalars())
    gone = [r.id for r in rows if _gone(r)]
    if gone:
        await db.execute(delete(WorkerProcess).where(WorkerProcess.id.in_(gone)))
    return [r for r in rows if r.id not in gone]


def refusal(others: list[WorkerProcess], *, shared: bool, settings: Settings) -> str | None:
    """Why this process may not join ``others``, or None when it may."""
    lonely = [r for r in others if not r.shared]
    if not others or (shared and not lonely):
        return None
    who = lonely[0] if lonely else others[0]
    gone = (f"If that process is gone (another machine), start again in "
            f"{int(_stale_after(settings).total_seconds())} s.")
    if shared:
        return (f"another agentloft process (pid {who.pid} on {who.host}) serves this database without "
                f"Redis. {ALONE_HINT}. {gone}")
    return (f"another agentloft process (pid {who.pid} on {who.host}) already serves this database. "
            f"{ALONE_HINT}. {gone}")


async def register(db: AsyncSession, *, settings: Settings, worker_id: str, shared: bool) -> None:
    """Add this process, or raise ``ConfigError`` saying why it must not run beside the others."""
    await _lock(db)
    reason = refusal(await _others(db, settings), shared=shared, settings=settings)
    if reason is not None:
        raise ConfigError(reason)
    now = utcnow()
    db.add(WorkerProcess(id=worker_id, host=socket.gethostname(), pid=os.getpid(), shared=shared,
                         started_at=now, heartbeat_at=now))
    _OURS.add(worker_id)


async def beat(db: AsyncSession, *, worker_id: str, shared: bool) -> None:
    """Renew this process's row (put it back if a long pause let another process drop it)."""
    now = utcnow()
    renewed = await rows_matched(db, update(WorkerProcess).where(WorkerProcess.id == worker_id)
                                 .values(heartbeat_at=now))
    if renewed == 0:
        db.add(WorkerProcess(id=worker_id, host=socket.gethostname(), pid=os.getpid(), shared=shared,
                             started_at=now, heartbeat_at=now))


async def unregister(db: AsyncSession, *, worker_id: str) -> None:
    await db.execute(delete(WorkerProcess).where(WorkerProcess.id == worker_id))
    _OURS.discard(worker_id)


async def live(db: AsyncSession, *, settings: Settings) -> list[WorkerProcess]:
    """The processes whose heartbeat is recent (for ``agentloft doctor``)."""
    since = utcnow() - _stale_after(settings)
    stmt = select(WorkerProcess).where(WorkerProcess.heartbeat_at >= since).order_by(WorkerProcess.started_at)
    return [r for r in (await db.execute(stmt)).scalars() if not _gone(r)]

