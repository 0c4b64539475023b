"""Migration 0011 on PostgreSQL: the documents' gram index keyed by user and date (``btree_gin``) replaces
0007's, the short-term count and the newest-matches query read it alone, the searches find what they did,
and it goes down and up again; where the role may not create the extension, the upgrade logs why and
keeps 0007's index. SQLite has nothing to migrate here."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import insert, text

from agentloft.auth.models import User
from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.documents import service as documents
from agentloft.documents.models import AgentDocument
from tests.pg import database as pg

BEFORE = "0009_scale_out"
NEW_INDEX = "idx_agent_doc_search_user_grams"
OLD_INDEX = "idx_agent_doc_search_grams"
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture
def pg_name() -> Iterator[str]:
    with pg.scratch_database("grams") as url:
        yield pg.name_of(url)


async def _fill(db: Database) -> None:
    async with db.session() as s:
        await s.execute(insert(User), [
            {"id": u, "username": f"u{u}", "password_hash": "x", "role": "user", "disabled": False,
             "created_at": T0, "updated_at": T0} for u in (1, 2)])
        doc = {"session_id": None, "tags": None, "summary": None, "created_at": T0, "updated_at": T0}
        await s.execute(insert(AgentDocument), [
            {**doc, "id": "ad_1", "user_id": 1, "type": "memory", "title": "咖啡", "content": "茶"},
            {**doc, "id": "ad_2", "user_id": 1, "type": "document", "title": "咖啡豆", "content": "x"},
            {**doc, "id": "ad_3", "user_id": 2, "type": "memory", "title": "咖啡", "content": "茶"}])
        # Enough other documents of both users that reading all of user 1's is not the cheap plan.
        await s.execute(insert(AgentDocument), [
            {**doc, "id": f"ad_f{i}", "user_id": 1 + i % 2, "type": "memory", "title": f"note {i}",
             "content": f"plain words {i}"} for i in range(4000)])


async def _searches(db: Database) -> list[tuple[int, list[str]]]:
    out = []
    async with db.session() as s:
        for user_id, q, kind in ((1, "咖啡", None), (1, "咖啡", "memory"), (1, "茶", None), (2, "啡", None)):
            found = await documents.list_documents(db=s, user_id=user_id, q=q, type=kind)
            out.append((found.total, sorted(d.id for d in found.items)))
    return out


EXPECTED = [(2, ["ad_1", "ad_2"]), (1, ["ad_1"]), (1, ["ad_1"]), (1, ["ad_3"])]


async def _indexes(db: Database) -> set[str]:
    async with db.session() as s:
        rows = await s.execute(text("SELECT indexname FROM pg_indexes WHERE tablename = 'agent_documents'"))
        return {r[0] for r in rows}


GRAMS = ("agentloft_grams((title || ' ' || coalesce(summary, '') || ' ' || coalesce(tags, '') || ' ' || "
         "content)) @> ARRAY[agentloft_fold('咖啡')]")


async def _plans(db: Database) -> str:
    """The plans of the short-term count and of the newest-matches window, as the search shapes them."""
    async with db.session() as s:
        await s.execute(text("ANALYZE agent_documents"))
        count = await s.execute(text(f"EXPLAIN SELECT count(*) FROM agent_documents WHERE user_id = 1 AND {GRAMS}"))
        window = await s.execute(text(
            f"EXPLAIN SELECT id FROM agent_documents WHERE user_id = 1 AND {GRAMS} AND created_at >= "
            "(SELECT created_at FROM agent_documents WHERE user_id = 1 ORDER BY created_at DESC OFFSET 999 LIMIT 1) "
            "ORDER BY created_at DESC NULLS LAST LIMIT 500"))
        return "\n".join(r[0] for r in [*count, *window])


async def _run(url: str, *, revoke: str | None = None) -> tuple[set[str], str, list[tuple[int, list[str]]]]:
    await asyncio.to_thread(migrate.upgrade, url, BEFORE)
    db = Database(url)
    try:
        await _fill(db)
        if revoke:  # the owner gives up its CREATE privilege: it may no longer create an extension
            await _sql(db, f'REVOKE CREATE ON DATABASE "{revoke}" FROM CURRENT_USER')
        await asyncio.to_thread(migrate.upgrade, url)
        return await _indexes(db), await _plans(db), await _searches(db)
    finally:
        if revoke:
            await _sql(db, f'GRANT CREATE ON DATABASE "{revoke}" TO CURRENT_USER')
        await db.dispose()


async def _sql(db: Database, sql: str) -> None:
    async with db.session() as s:
        await s.execute(text(sql))


def test_short_term_queries_read_the_user_keyed_index_alone(pg_name: str) -> None:
    indexes, plans, found = asyncio.run(_run(pg.database_url(pg_name)))
    assert NEW_INDEX in indexes and OLD_INDEX not in indexes
    assert plans.count(f"Bitmap Index Scan on {NEW_INDEX}") == 2 and "BitmapAnd" not in plans, plans
    assert found == EXPECTED
    asyncio.run(_down_and_up(pg.database_url(pg_name)))


async def _down_and_up(url: str) -> None:
    await asyncio.to_thread(command.downgrade, migrate.alembic_config(url), BEFORE)
    db = Database(url)
    try:
        indexes = await _indexes(db)
        assert OLD_INDEX in indexes and NEW_INDEX not in indexes
        async with db.session() as s:  # (the search of today needs the later migrations' tables)
            counted = await s.execute(text(f"SELECT count(*) FROM agent_documents WHERE user_id = 1 AND {GRAMS}"))
            assert counted.scalar_one() == EXPECTED[0][0]
    finally:
        await db.dispose()
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url)
    try:
        assert NEW_INDEX in await _indexes(db)
        assert await _searches(db) == EXPECTED
    finally:
        await db.dispose()


def test_without_create_privilege_the_upgrade_keeps_the_old_index(
        pg_name: str, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agentloft.migrations"):
        indexes, plans, found = asyncio.run(_run(pg.database_url(pg_name), revoke=pg_name))
    assert OLD_INDEX in indexes and NEW_INDEX not in indexes
    assert f"Bitmap Index Scan on {OLD_INDEX}" in plans, plans
    assert found == EXPECTED
    assert any("btree_gin extension unavailable" in r.getMessage() and "permission denied" in r.getMessage()
               for r in caplog.records), caplog.records
