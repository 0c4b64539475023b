"""Migration 0019 indexes each user's running sessions (what a turn counts as it starts), on SQLite and, in
the PostgreSQL pass, on PostgreSQL; the count reads that index, and a downgrade drops it."""

from __future__ import annotations

import asyncio
from typing import Any

from alembic import command

from agentloft.chat import service
from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.core.errors import TooMany
from tests.support import run_sql

INDEX = "ix_agent_sessions_user_running"
STAMP = "'2026-01-01 00:00:00'"


def _index_sql(url: str) -> list[Any]:
    if url.startswith("postgresql"):
        query = f"SELECT indexdef FROM pg_indexes WHERE indexname = '{INDEX}'"
    else:
        query = f"SELECT sql FROM sqlite_master WHERE type = 'index' AND name = '{INDEX}'"
    return [row[0] for row in asyncio.run(run_sql(url, query))]


async def _count_refuses(url: str, limit: int) -> bool:
    db = Database(url)
    try:
        async with db.session() as s:
            try:
                await service.refuse_too_many_running(db=s, user_id=1, limit=limit)
            except TooMany:
                return True
            return False
    finally:
        await db.dispose()


def test_running_sessions_have_an_index_the_count_reads(blank_database_url: str) -> None:
    url = blank_database_url
    migrate.upgrade(url, "0018_jobs")
    sessions = [("a1", 1, "idle"), ("a2", 1, "running"), ("a3", 1, "awaiting_approval"), ("a4", 1, "running"),
                ("b1", 2, "running")]
    asyncio.run(run_sql(url, *(
        f"INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
        f"VALUES ({u}, 'u{u}', 'x', 'user', false, {STAMP}, {STAMP})" for u in (1, 2)), *(
        f"INSERT INTO agent_sessions (id, user_id, kind, title, status, title_source, created_at, updated_at) "
        f"VALUES ('{sid}', {u}, 'llm', '', '{status}', 'auto', {STAMP}, {STAMP})" for sid, u, status in sessions)))
    assert _index_sql(url) == []

    migrate.upgrade(url)
    [definition] = _index_sql(url)
    assert "WHERE" in definition and "'running'" in definition
    assert asyncio.run(_count_refuses(url, 2)) is False  # user 1 runs two: a2, a4
    assert asyncio.run(_count_refuses(url, 1)) is True
    if not url.startswith("postgresql"):  # PostgreSQL plans a five-row table without any index
        plan = asyncio.run(run_sql(url, "EXPLAIN QUERY PLAN SELECT count(*) FROM agent_sessions "
                                     "WHERE user_id = 1 AND status = 'running'"))
        assert INDEX in " ".join(str(row[-1]) for row in plan)

    command.downgrade(migrate.alembic_config(url), "0018_jobs")
    assert _index_sql(url) == []
