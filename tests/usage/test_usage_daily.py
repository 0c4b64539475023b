"""Each user's usage per day (``usage_daily``, migration 0038), which the budget check sums instead of the
records: the database keeps it equal to the records' sums as turns are recorded (and a rolled-back record
never counts), the migration fills it from the records already kept, and a downgrade drops it. On SQLite
and, in the PostgreSQL pass, on PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from alembic import command
from sqlalchemy import text as sql

from agentloft.core import migrate
from agentloft.core.db import Database
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, text
from tests.support import ApiClient, LiveApp, run_sql

RECORDS_BY_DAY = ("SELECT user_id, day, sum(input_tokens + output_tokens), coalesce(sum(cost), 0.0) "
                  "FROM usage_records GROUP BY user_id, day ORDER BY user_id, day")
DAYS = "SELECT user_id, day, tokens, cost FROM usage_daily ORDER BY user_id, day"


def _same(days: list[Any], records: list[Any]) -> None:
    assert [tuple(r[:3]) for r in days] == [tuple(r[:3]) for r in records]
    assert [r[3] for r in days] == pytest.approx([r[3] for r in records])


def test_the_days_add_up_each_users_records_as_turns_are_recorded(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("one", input_tokens=10, output_tokens=5), text("two", input_tokens=7, output_tokens=3),
                    text("mine", input_tokens=100, output_tokens=1))
    chat(user, "helper", "first")
    chat(user, "helper", "second")
    chat(admin, "helper", "the admin's")
    admin.ok("PUT", f"/api/admin/models/{agent['modelId']}", json={"inputPricePerMTok": None})
    fake_model.push(text("unpriced", input_tokens=4, output_tokens=2))
    chat(user, "helper", "third, without a price")  # adds its tokens, and no cost
    days = app.sql(DAYS)
    assert sorted(r[2] for r in days) == [31, 101]
    _same(days, app.sql(RECORDS_BY_DAY))


async def _rolled_back_record(url: str) -> None:
    db = Database(url)
    try:
        async with db.session() as s:
            await s.execute(sql(_record(1, "2026-03-02", 1000, 1000, "NULL")))
            await s.rollback()
    finally:
        await db.dispose()


def _record(user: int, day: str, tokens_in: int, tokens_out: int, cost: str) -> str:
    return ("INSERT INTO usage_records (user_id, source, input_tokens, output_tokens, cache_read_tokens, "
            f"cache_write_tokens, cost, day, created_at) VALUES ({user}, 'chat', {tokens_in}, {tokens_out}, 0, 0, "
            f"{cost}, '{day}', '{day} 12:00:00')")


def test_the_migration_fills_the_days_from_the_records_kept(blank_database_url: str) -> None:
    url = blank_database_url
    migrate.upgrade(url, "0037_tool_approvers")
    stamp = "'2026-01-01 00:00:00'"
    asyncio.run(run_sql(url, *(
        f"INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
        f"VALUES ({u}, 'u{u}', 'x', 'user', false, {stamp}, {stamp})" for u in (1, 2)),
        _record(1, "2026-03-01", 10, 5, "0.5"), _record(1, "2026-03-01", 20, 1, "NULL"),
        _record(1, "2026-03-02", 3, 3, "0.25"), _record(2, "2026-03-01", 8, 0, "1.0")))

    migrate.upgrade(url)
    days = asyncio.run(run_sql(url, DAYS))
    assert [(r[0], str(r[1]), r[2], r[3]) for r in days] == [
        (1, "2026-03-01", 36, 0.5), (1, "2026-03-02", 6, 0.25), (2, "2026-03-01", 8, 1.0)]
    # later records add to their day, or start one; a rolled-back one adds nothing
    asyncio.run(run_sql(url, _record(1, "2026-03-02", 1, 1, "0.125"), _record(2, "2026-03-03", 2, 2, "NULL")))
    asyncio.run(_rolled_back_record(url))
    days = asyncio.run(run_sql(url, DAYS))
    _same(days, asyncio.run(run_sql(url, RECORDS_BY_DAY)))
    assert len(days) == 4
    # a deleted user's days go with them
    asyncio.run(run_sql(url, "DELETE FROM users WHERE id = 2"))
    assert [r[0] for r in asyncio.run(run_sql(url, DAYS))] == [1, 1]

    command.downgrade(migrate.alembic_config(url), "0037_tool_approvers")
    asyncio.run(run_sql(url, _record(1, "2026-03-04", 1, 1, "NULL")))  # no trigger left behind
    migrate.upgrade(url)
    _same(asyncio.run(run_sql(url, DAYS)), asyncio.run(run_sql(url, RECORDS_BY_DAY)))
