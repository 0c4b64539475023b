"""Alembic environment: runs the migrations on the async engine for the configured URL."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text
from sqlalchemy.engine import Connection

from agentloft.core.db import Base, make_engine
from agentloft.core.metadata import import_all_models
from agentloft.core.migrate import run_blocking

import_all_models()
target_metadata = Base.metadata


# pg_advisory_xact_lock key of schema upgrades ("agentloft migrate"; any fixed 64-bit number).
UPGRADE_LOCK = 0x61676C6F_6D696772


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        if connection.dialect.name == "postgresql":
            # Several machines may run `agentloft db upgrade` at once (each deploy step): the first takes
            # the lock and upgrades; the others wait, then find the schema current and do nothing.
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": UPGRADE_LOCK})
        context.run_migrations()


async def _run_async() -> None:
    url = context.config.attributes.get("database_url") or context.config.get_main_option("sqlalchemy.url")
    if not url:  # ``core.migrate`` always sets both; a bare ``alembic`` call without a URL stops here
        raise RuntimeError("no database URL: run migrations through `agentloft db upgrade`")
    engine = make_engine(str(url))
    async with engine.connect() as conn:
        await conn.run_sync(_run)
        await conn.commit()
    await engine.dispose()


def run() -> None:
    if context.is_offline_mode():
        raise RuntimeError("offline migrations are not supported")
    run_blocking(_run_async)  # also from inside a running loop (the app's start-up)


run()
