"""Run the Alembic migrations that ship inside the package (so ``pip install`` alone is enough).

Every start calls ``upgrade``, and nearly every start finds the schema current. Alembic and what it
imports stay resident once imported (~11 MB of a ~230 MB server), so ``upgrade`` first reads the
database's revision with the app's own engine and imports Alembic only when there is something to do.
``HEAD`` names the newest revision for that check; ``tests/core/test_migrate.py`` fails when a new
migration is added without it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from agentloft.core.db import make_engine

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent.parent / "migrations"
HEAD = "0039_waiting_tasks"

T = TypeVar("T")


def alembic_config(database_url: str) -> Config:
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("sqlalchemy.url", database_url)
    cfg.attributes["database_url"] = database_url
    return cfg


def upgrade(database_url: str, revision: str = "head") -> None:
    """Bring the schema to ``revision``; safe to call on every start."""
    if database_url.startswith("sqlite"):
        path = database_url.split("///", 1)[-1]
        if path and path != ":memory:":
            if revision == "head" and Path(path).exists() and current_revision(database_url) == HEAD:
                return
            Path(path).parent.mkdir(parents=True, exist_ok=True)
    elif revision == "head" and current_revision(database_url) == HEAD:
        return
    from alembic import command

    command.upgrade(alembic_config(database_url), revision)


def current_revision(database_url: str) -> str | None:
    """The database's schema revision (None before the first migration). Callable from inside a
    running event loop, as the app's start-up does."""

    async def read() -> str | None:
        engine = make_engine(database_url)
        try:
            async with engine.connect() as conn:
                rows = (await conn.execute(text("SELECT version_num FROM alembic_version"))).all()
        except DBAPIError:  # no table yet
            return None
        finally:
            await engine.dispose()
        return str(rows[0][0]) if len(rows) == 1 else None

    return run_blocking(read)


def run_blocking(make: Callable[[], Awaitable[T]]) -> T:
    """Run the coroutine ``make()`` to its end and return its result, from sync code: on this thread when
    no event loop runs here, else on a fresh thread with a loop of its own (the caller's loop waits)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(make))
    results: list[T] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            results.append(asyncio.run(_as_coroutine(make)))
        except BaseException as exc:
            errors.append(exc)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if errors:
        raise errors[0]
    return results[0]


async def _as_coroutine(make: Callable[[], Awaitable[T]]) -> T:
    return await make()
