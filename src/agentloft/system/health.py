"""``/healthz`` and ``/readyz``: the probes a load balancer or an orchestrator asks, cheap and
unauthenticated, saying nothing but whether the process is alive and whether it can serve.

- ``/healthz``: the process answers HTTP. It touches nothing else, so a slow database never gets a
  healthy worker restarted.
- ``/readyz``: the database answers a ``SELECT 1``, Redis (when one is configured) answers ``PING``, and
  the schema is at this build's head — a worker started against a database not yet migrated is kept out
  of the rotation rather than failing requests. Each check waits at most ``CHECK_LIMIT_S``; the answer
  names only which of the three failed (``{"status": "unavailable", "failing": ["database"]}``, 503),
  never hosts, versions or errors (``agentloft doctor`` tells those to whoever runs the instance).

The schema head is read from the migration scripts once per process; the database's revision is read
on each probe (one indexed row), so a migration run while the server is up turns it ready without a
restart.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Literal

from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import text
from sqlalchemy.engine import Connection

from agentloft.core import migrate
from agentloft.core.db import Database

if TYPE_CHECKING:
    from agentloft.core.redis import SharedRedis

CHECK_LIMIT_S = 2.0
Part = Literal["database", "migrations", "redis"]


@functools.cache
def _head() -> str | None:
    return ScriptDirectory.from_config(migrate.alembic_config("sqlite://")).get_current_head()


def _revision(conn: Connection) -> str | None:
    return MigrationContext.configure(conn).get_current_revision()


async def _database(db: Database) -> list[Part]:
    async with db.engine.connect() as conn:
        await conn.execute(text("SELECT 1"))
        revision = await conn.run_sync(_revision)
    return [] if revision == _head() else ["migrations"]


async def _bounded(check: Awaitable[list[Part]], part: Part) -> list[Part]:
    try:
        async with asyncio.timeout(CHECK_LIMIT_S):
            return await check
    except Exception:  # unreachable, refused, timed out: all mean "not ready", and the probe says no more
        return [part]


async def _redis(redis: SharedRedis) -> list[Part]:
    await redis.client.ping()
    return []


async def failing(db: Database, redis: SharedRedis | None) -> list[Part]:
    """What keeps this worker from serving, checked side by side; empty when it is ready."""
    checks = [_bounded(_database(db), "database")]
    if redis is not None:
        checks.append(_bounded(_redis(redis), "redis"))
    return [part for parts in await asyncio.gather(*checks) for part in parts]
