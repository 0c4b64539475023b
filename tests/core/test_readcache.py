"""The read cache (``agentloft.core.readcache``): what a write to a watched table does to the entries, reads that
overlap a write, and when the cache keeps nothing. Each test uses its own SQLite file and the app's own
``Database`` (so the cache watches the engine exactly as in the app)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, Text, insert, text, update

from agentloft.core.db import Database
from agentloft.core.readcache import ReadCache
from tests.support import file_database

GROUP = "chat_config"  # reads of ``agents`` (among others)
_META = MetaData()
AGENTS = Table("agents", _META, Column("id", Integer, primary_key=True), Column("name", Text))
MESSAGES = Table("agent_messages", _META, Column("id", Integer, primary_key=True), Column("body", Text))
NOTES = Table("notes", _META, Column("id", Integer, primary_key=True), Column("body", Text))


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Database]:
    db = await file_database(tmp_path / "cache.db",
                             "CREATE TABLE agents (id INTEGER PRIMARY KEY, name TEXT)",
                             "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, body TEXT)",
                             "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
                             "INSERT INTO agents (id, name) VALUES (1, 'first')")
    yield db
    await db.dispose()


async def _name(db: Database) -> str:
    """The agent's name through the cache; the number of database reads is counted in ``reads``."""

    async def read() -> str:
        reads.append(1)
        async with db.read_session() as s:
            return str((await s.execute(text("SELECT name FROM agents WHERE id = 1"))).scalar_one())

    return await db.cache.load(GROUP, "agent-1", read)


reads: list[int] = []


@pytest.fixture(autouse=True)
def _count_reads() -> None:
    reads.clear()


@pytest.mark.parametrize("statement", [
    "UPDATE agents SET name = 'second' WHERE id = 1",
    "INSERT OR REPLACE INTO agents (id, name) VALUES (1, 'second')",
    # Forms a pattern on the SQL text misses: a leading WITH, a schema-qualified name, leading comments.
    "WITH n AS (SELECT 'second' AS v) UPDATE agents SET name = (SELECT v FROM n) WHERE id = 1",
    "UPDATE main.agents SET name = 'second' WHERE id = 1",
    "/* who */ -- why\n UPDATE agents SET name = 'second' WHERE id = 1",
    'UPDATE "main"."agents" SET name = \'second\' WHERE id = 1',
])
async def test_a_committed_raw_write_to_a_watched_table_is_read_again(database: Database, statement: str) -> None:
    assert await _name(database) == "first"
    assert await _name(database) == "first"
    assert len(reads) == 1  # the second call was served from the cache
    async with database.session() as s:
        await s.execute(text(statement))
    assert await _name(database) == "second"
    assert len(reads) == 2


async def test_a_committed_core_write_to_a_watched_table_is_read_again(database: Database) -> None:
    await _name(database)
    async with database.session() as s:
        await s.execute(update(AGENTS).where(AGENTS.c.id == 1).values(name="second"))
    assert await _name(database) == "second"
    assert len(reads) == 2


async def test_a_raw_write_that_changed_nothing_keeps_the_entries(database: Database) -> None:
    await _name(database)
    async with database.session() as s:
        await s.execute(text("UPDATE agents SET name = 'x' WHERE id = 99"))
        await s.execute(text("SELECT name FROM agents"))
    await _name(database)
    assert len(reads) == 1


async def test_a_trigger_that_writes_a_watched_table_drops_the_entries(database: Database) -> None:
    """The statement names an unwatched table, but SQLite changed more rows than it did itself."""
    async with database.session() as s:
        await s.execute(text("CREATE TRIGGER rename AFTER INSERT ON notes "
                             "BEGIN UPDATE agents SET name = 'second' WHERE id = 1; END"))
    await _name(database)
    async with database.session() as s:
        await s.execute(insert(NOTES).values(body="hello"))
    assert await _name(database) == "second"
    assert len(reads) == 2


async def test_a_trigger_that_keeps_an_index_keeps_the_entries(database: Database) -> None:
    """A message insert that also writes a search index (as migration 0007's triggers do) changes more rows
    than its own, yet no watched table: a chat turn must not empty the cache."""
    async with database.session() as s:
        await s.execute(text("CREATE TABLE message_index (body TEXT)"))
        await s.execute(text("CREATE TRIGGER index_message AFTER INSERT ON agent_messages "
                             "BEGIN INSERT INTO message_index VALUES (new.body); END"))
    await _name(database)
    async with database.session() as s:
        await s.execute(insert(MESSAGES).values(body="hello"))
    await _name(database)
    assert len(reads) == 1


async def test_writes_to_other_tables_keep_the_entries(database: Database) -> None:
    """As a chat turn writes its messages: Core inserts, one with several rows, one returning ids."""
    await _name(database)
    async with database.session() as s:
        await s.execute(insert(MESSAGES).values(body="hello"))
        await s.execute(insert(MESSAGES), [{"body": "one"}, {"body": "two"}])
        await s.execute(insert(MESSAGES).values(body="back").returning(MESSAGES.c.id))
        await s.execute(update(MESSAGES).where(MESSAGES.c.body == "one").values(body="1").returning(MESSAGES.c.id))
    await _name(database)
    assert len(reads) == 1


async def test_an_entry_read_while_a_write_was_open_is_dropped_when_it_commits(database: Database) -> None:
    """The write's statement has run (not committed); a reader sees the old row and keeps it; the commit
    must drop it — the bump when the writer's connection goes back to the pool."""
    async with database.session() as writer:
        await writer.execute(text("UPDATE agents SET name = 'second' WHERE id = 1"))
        assert await _name(database) == "first"  # the old, committed row (the write is not visible yet)
    assert await _name(database) == "second"
    assert len(reads) == 2


async def test_a_read_that_overlaps_a_write_is_not_kept(database: Database) -> None:
    started, written = asyncio.Event(), asyncio.Event()

    async def slow_read() -> str:
        async with database.read_session() as s:
            name = str((await s.execute(text("SELECT name FROM agents WHERE id = 1"))).scalar_one())
        started.set()
        await written.wait()  # a write commits while this read is in flight
        return name

    reader = asyncio.create_task(database.cache.load(GROUP, "agent-1", slow_read))
    await started.wait()
    async with database.session() as s:
        await s.execute(text("UPDATE agents SET name = 'second' WHERE id = 1"))
    written.set()
    assert await reader == "first"  # the caller gets what it read...
    assert await _name(database) == "second"  # ...but it was not kept
    assert len(reads) == 1


async def test_a_rolled_back_write_still_drops_the_entries(database: Database) -> None:
    await _name(database)
    with pytest.raises(RuntimeError):
        async with database.session() as s:
            await s.execute(text("UPDATE agents SET name = 'never' WHERE id = 1"))
            raise RuntimeError("abandon the transaction")
    assert await _name(database) == "first"
    assert len(reads) == 2


async def test_a_disabled_cache_reads_every_time() -> None:
    cache = ReadCache(enabled=False)
    calls: list[int] = []

    async def read() -> str:
        calls.append(1)
        return "value"

    assert await cache.load(GROUP, "k", read) == "value"
    assert await cache.load(GROUP, "k", read) == "value"
    assert len(calls) == 2


def test_postgresql_databases_get_no_cache() -> None:
    """Several server processes may share a PostgreSQL database; this process would miss their writes."""
    db = Database("postgresql+asyncpg://nobody:secret@127.0.0.1:1/none")
    assert db.cache.enabled is False

