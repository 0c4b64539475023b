"""Migration 0016 on PostgreSQL: every chat message carries its session's owner, filled in for the
messages already there and kept by the database on every insert, move and change of owner; the chat
search reads the messages' gram index keyed by that owner, finds what it did, and the migration goes
down and up again. SQLite has nothing to migrate here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from alembic import command
from sqlalchemy import column, insert, table, text
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.chat import search
from agentloft.chat.models import AgentMessage, AgentSession
from agentloft.core import migrate, textsearch
from agentloft.core.db import Database
from tests.pg import database as pg
from tests.support import executed_statements

BEFORE = "0015_version_trigger"
NEW_INDEX = "idx_agent_messages_search_user_grams"
OLD_INDEX = "idx_agent_messages_search_grams"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def url() -> Iterator[str]:
    with pg.scratch_database("owner") as scratch:
        yield scratch


def _session(sid: str, user_id: int, title: str) -> dict[str, Any]:
    return {"id": sid, "user_id": user_id, "agent_id": None, "kind": "llm", "title": title, "status": "idle",
            "model_history": None, "deleted_at": None, "created_at": T0, "updated_at": T0}


def _message(mid: str, sid: str, content: str, order: int = 0, source: str = "user") -> dict[str, Any]:
    return {"id": mid, "session_id": sid, "role": "user", "content": content, "parts": [], "sort_order": order,
            "source": source, "status": "complete", "created_at": T0, "updated_at": T0}


async def _put(s: AsyncSession, model: Any, rows: list[dict[str, Any]]) -> None:
    """Insert `rows` into `model`'s table naming only their columns: an insert of the model itself adds its
    Python-side defaults, columns of later migrations that the schema at revision BEFORE does not have."""
    columns = model.__table__.c
    await s.execute(insert(table(model.__tablename__, *(column(k, columns[k].type) for k in rows[0]))), rows)


async def _sql(db: Database, sql: str) -> list[Any]:
    async with db.session() as s:
        result = await s.execute(text(sql))
        return list(result.all()) if result.returns_rows else []


async def _indexes(db: Database) -> set[str]:
    return {r[0] for r in await _sql(db, "SELECT indexname FROM pg_indexes WHERE tablename = 'agent_messages'")}


async def _fill(db: Database) -> None:
    async with db.session() as s:
        await _put(s, User, [
            {"id": u, "username": f"u{u}", "password_hash": "x", "role": "user", "disabled": False,
             "created_at": T0, "updated_at": T0} for u in (1, 2)])
        await _put(s, AgentSession, [_session("s1", 1, "one"), _session("s2", 2, "two")])
        await _put(s, AgentMessage, [
            _message("m1", "s1", "咖啡和茶"), _message("m2", "s2", "咖啡"),
            _message("m3", "s1", "咖啡 from elsewhere", 1, source="a2a")])
        # Enough other messages of both users that reading all of user 1's is not the cheap plan.
        await _put(s, AgentSession, [_session(f"sf{i}", 1 + i % 2, f"t{i}") for i in range(200)])
        await _put(s, AgentMessage, [
            _message(f"mf{i}", f"sf{i % 200}", f"plain words {i}", i) for i in range(4000)])


async def _owners(db: Database) -> dict[str, int | None]:
    rows = await _sql(db, "SELECT id, user_id FROM agent_messages WHERE id NOT LIKE 'mf%'")
    return {mid: owner for mid, owner in rows}


async def _found(db: Database) -> list[tuple[int, list[str]]]:
    out = []
    async with db.session() as s:
        for user_id, q in ((1, "咖啡"), (2, "咖啡"), (1, "茶"), (2, "茶")):
            hits = await search.search_sessions(db=s, user_id=user_id, q=q, offset=0, limit=20)
            assert hits is not None
            out.append((hits.total, [h.session.id for h in hits.items]))
    return out


async def _search_plan(db: Database) -> str:
    """The plan of the chat search's own statement for a short term of user 1."""
    await _sql(db, "ANALYZE agent_messages")
    with executed_statements(db.engine.sync_engine) as executed:
        async with db.session() as s:
            await search.search_sessions(db=s, user_id=1, q="咖啡", offset=0, limit=20)
    statement, parameters = next((s, p) for s, p in executed if "WITH hits" in s)
    async with db.session() as s:
        await textsearch.pg_custom_plans(s)
        raw = await (await s.connection()).get_raw_connection()
        rows = await raw.driver_connection.fetch(f"EXPLAIN {statement}", *parameters)  # type: ignore[union-attr]
    return "\n".join(r[0] for r in rows)


async def _migrated(url: str) -> None:
    await asyncio.to_thread(migrate.upgrade, url, BEFORE)
    db = Database(url)
    try:
        await _fill(db)
        await asyncio.to_thread(migrate.upgrade, url)
        assert await _owners(db) == {"m1": 1, "m2": 2, "m3": 1}  # the messages already there
        indexes = await _indexes(db)
        assert NEW_INDEX in indexes and OLD_INDEX not in indexes
        plan = await _search_plan(db)  # the index finds only the user's matches
        assert f"Bitmap Index Scan on {NEW_INDEX}" in plan, plan
        scan = plan.split(f"Bitmap Index Scan on {NEW_INDEX}")[1].split("->")[0]
        assert "Index Cond: ((user_id = 1) AND" in scan, plan
        assert await _found(db) == [(1, ["s1"]), (1, ["s2"]), (1, ["s1"]), (0, [])]
    finally:
        await db.dispose()


async def _kept(url: str) -> None:
    db = Database(url)
    try:
        async with db.session() as s:
            await _put(s, AgentMessage, [_message("m4", "s2", "茶", 1)])
            await s.execute(text("UPDATE agent_messages SET user_id = 1 WHERE id = 'm2'"))  # not the app's to set
        assert (await _owners(db))["m4"] == 2 and (await _owners(db))["m2"] == 2
        assert await _found(db) == [(1, ["s1"]), (1, ["s2"]), (1, ["s1"]), (1, ["s2"])]
        await _sql(db, "UPDATE agent_sessions SET user_id = 1 WHERE id = 's2'")  # a session changes owner
        assert {k: v for k, v in (await _owners(db)).items() if k in ("m2", "m4")} == {"m2": 1, "m4": 1}
        await _sql(db, "UPDATE agent_messages SET session_id = 'sf1' WHERE id = 'm4'")  # a move to user 2's
        assert (await _owners(db))["m4"] == 2
        assert await _found(db) == [(2, ["s2", "s1"]), (0, []), (1, ["s1"]), (1, ["sf1"])]
    finally:
        await db.dispose()


async def _down_and_up(url: str) -> None:
    await asyncio.to_thread(command.downgrade, migrate.alembic_config(url), BEFORE)
    db = Database(url)
    try:
        columns = await _sql(db, "SELECT 1 FROM information_schema.columns WHERE table_name = 'agent_messages' "
                                 "AND column_name = 'user_id'")
        indexes = await _indexes(db)
        assert not columns and OLD_INDEX in indexes and NEW_INDEX not in indexes
    finally:
        await db.dispose()
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url)
    try:
        assert (await _owners(db))["m4"] == 2
        assert await _found(db) == [(2, ["s2", "s1"]), (0, []), (1, ["s1"]), (1, ["sf1"])]
    finally:
        await db.dispose()


def test_messages_carry_their_owner_and_the_search_reads_it(url: str) -> None:
    asyncio.run(_migrated(url))
    asyncio.run(_kept(url))
    asyncio.run(_down_and_up(url))


async def _without_btree_gin(url: str, name: str) -> set[str]:
    """Migrated from before 0011 by a role that may not create extensions; returns the messages' indexes
    after checking the searches."""
    await asyncio.to_thread(migrate.upgrade, url, "0009_scale_out")
    db = Database(url)
    try:
        await _sql(db, f'REVOKE CREATE ON DATABASE "{name}" FROM CURRENT_USER')
        try:
            await asyncio.to_thread(migrate.upgrade, url)
        finally:
            await _sql(db, f'GRANT CREATE ON DATABASE "{name}" TO CURRENT_USER')
        await _fill(db)
        assert await _owners(db) == {"m1": 1, "m2": 2, "m3": 1}
        assert await _found(db) == [(1, ["s1"]), (1, ["s2"]), (1, ["s1"]), (0, [])]
        return await _indexes(db)
    finally:
        await db.dispose()


def test_without_btree_gin_the_old_index_stays_and_search_works(url: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agentloft.migrations"):
        indexes = asyncio.run(_without_btree_gin(url, pg.name_of(url)))
    assert OLD_INDEX in indexes and NEW_INDEX not in indexes
    assert any("keeping the message gram index" in r.getMessage() for r in caplog.records), caplog.records
