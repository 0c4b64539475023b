"""A document's versions are written by the database (migration 0015): an update is one read and one
UPDATE, a delete one read and one DELETE, on both databases; the trigger keeps the replaced state with
the right number and time, only when a versioned column changes, whichever statement changes it, and
no more than ``MAX_VERSIONS_KEPT`` of them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import event, insert, select, text

from agentloft.auth.models import User
from agentloft.core import migrate
from agentloft.core.db import Database, utcnow
from agentloft.documents import service as documents
from agentloft.documents.models import AgentDocumentVersion


@pytest.fixture
def migrated(blank_database_url: str) -> Iterator[str]:
    migrate.upgrade(blank_database_url)
    yield blank_database_url


@asynccontextmanager
async def _database(url: str) -> AsyncIterator[Database]:
    db = Database(url)
    now = utcnow()
    async with db.session() as s:
        await s.execute(insert(User).values(id=1, username="u1", password_hash="x", role="user",
                                            disabled=False, created_at=now, updated_at=now))
    try:
        yield db
    finally:
        await db.dispose()


async def _create(db: Database, content: str = "v0") -> str:
    async with db.session() as s:
        return (await documents.create_document(db=s, user_id=1, title="t", content=content)).id


async def _update(db: Database, doc_id: str, **changes: Any) -> None:
    async with db.session() as s:
        await documents.update_document(db=s, user_id=1, document_id=doc_id, changes=changes)


async def _versions(db: Database, doc_id: str) -> list[AgentDocumentVersion]:
    async with db.session() as s:
        v = AgentDocumentVersion
        rows = await s.execute(select(v).where(v.document_id == doc_id).order_by(v.version))
        return list(rows.scalars())


def _statements(db: Database) -> list[str]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement.split()[0].upper())

    event.listen(db.engine.sync_engine, "before_cursor_execute", record)
    return seen


def test_an_update_is_one_statement_and_a_delete_one_read_and_one_write(migrated: str) -> None:
    async def run() -> None:
        async with _database(migrated) as db:
            doc_id = await _create(db)
            seen = _statements(db)
            await _update(db, doc_id, content="v1")
            assert seen == ["UPDATE"]
            assert [v.content for v in await _versions(db, doc_id)] == ["v0"]
            seen.clear()
            await _update(db, doc_id, content="v1")  # nothing changes: nothing written, the row read back
            assert seen == ["UPDATE", "SELECT"]
            assert [v.content for v in await _versions(db, doc_id)] == ["v0"]
            seen.clear()
            async with db.session() as s:
                await documents.delete_document(db=s, user_id=1, document_id=doc_id)
            assert seen == ["SELECT", "DELETE"]
            assert await _versions(db, doc_id) == []  # gone with the document

    asyncio.run(run())


def test_the_replaced_state_is_kept_only_when_a_versioned_column_changes(migrated: str) -> None:
    async def run() -> None:
        async with _database(migrated) as db:
            doc_id = await _create(db)
            async with db.session() as s:
                before = await documents.get_document_by_id(db=s, user_id=1, document_id=doc_id)
            await _update(db, doc_id, title="t2", tags="a, b")
            await _update(db, doc_id, content="v0")  # no change: no version
            async with db.session() as s:  # written by other code: still a version; a session move is none
                await s.execute(text("UPDATE agent_documents SET summary = 'by hand' WHERE id = :id"), {"id": doc_id})
                await s.execute(text("UPDATE agent_documents SET session_id = 'as_x' WHERE id = :id"), {"id": doc_id})
            kept = await _versions(db, doc_id)
            assert [(v.version, v.title, v.tags, v.summary) for v in kept] == [
                (1, "t", None, "v0"), (2, "t2", "a,b", "v0")]
            assert kept[0].created_at == before.updated_at
            assert (kept[0].content, kept[0].type) == ("v0", "memory")

    asyncio.run(run())


def test_no_more_than_the_newest_versions_are_kept(migrated: str) -> None:
    async def run() -> None:
        async with _database(migrated) as db:
            doc_id = await _create(db)
            for n in range(1, documents.MAX_VERSIONS_KEPT + 3):
                await _update(db, doc_id, content=f"v{n}")
            kept = await _versions(db, doc_id)
            assert len(kept) == documents.MAX_VERSIONS_KEPT
            assert (kept[0].version, kept[0].content) == (3, "v2")
            assert (kept[-1].version, kept[-1].content) == (documents.MAX_VERSIONS_KEPT + 2,
                                                             f"v{documents.MAX_VERSIONS_KEPT + 1}")

    asyncio.run(run())
