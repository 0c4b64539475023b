"""``/healthz`` and ``/readyz``: unauthenticated, cheap, and saying only which part keeps a worker from
serving — the database, the schema, or Redis."""

from __future__ import annotations

import asyncio

import httpx

from agentloft.core.db import Database
from agentloft.core.redis import connect
from agentloft.system import health
from tests.support import LiveApp


def test_both_probes_answer_without_signing_in(app: LiveApp) -> None:
    for method in ("GET", "HEAD"):
        alive = httpx.request(method, f"{app.url}/healthz")
        ready = httpx.request(method, f"{app.url}/readyz")
        assert (alive.status_code, ready.status_code) == (200, 200), (method, alive.text, ready.text)
    assert httpx.get(f"{app.url}/healthz").json() == {"status": "ok"}
    assert httpx.get(f"{app.url}/readyz").json() == {"status": "ready"}


def test_a_schema_behind_this_build_is_not_ready_until_migrated(app: LiveApp) -> None:
    [(head,)] = app.sql("SELECT version_num FROM alembic_version")
    app.sql("UPDATE alembic_version SET version_num = ?", ("0001_core",))
    r = httpx.get(f"{app.url}/readyz")
    assert (r.status_code, r.json()) == (503, {"status": "unavailable", "failing": ["migrations"]})
    assert httpx.get(f"{app.url}/healthz").status_code == 200  # alive all the same
    app.sql("UPDATE alembic_version SET version_num = ?", (head,))
    assert httpx.get(f"{app.url}/readyz").status_code == 200  # no restart needed


def test_an_unreachable_database_and_redis_are_named_and_nothing_else() -> None:
    """Real refusals: a port nothing listens on, for PostgreSQL and for Redis."""
    db = Database("postgresql+asyncpg://nobody:secret@127.0.0.1:1/none")
    redis = connect("redis://:secret@127.0.0.1:1/0", "probe")

    async def probe() -> list[health.Part]:
        try:
            return await health.failing(db, redis)
        finally:
            await redis.aclose()
            await db.engine.dispose()

    assert asyncio.run(probe()) == ["database", "redis"]
