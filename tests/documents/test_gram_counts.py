"""PostgreSQL's kept totals of lone short terms (migration 0014): created by a search once a term has
many matches, answered from then on, and exact after every kind of write, by any user, at the same time
as other writes, and after a ``TRUNCATE``; never created while a write of the user is open. The oracle is
a count over the gram function itself. SQLite has no such counts (its index counts without the table)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime

import pytest
from sqlalchemy import insert, text

from agentloft.auth.models import User
from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.documents import search
from agentloft.documents import service as documents
from tests.pg import database as pg

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DOC_TEXT = "(title || ' ' || coalesce(summary, '') || ' ' || coalesce(tags, '') || ' ' || content)"
Kept = dict[tuple[int, str, str], int]


@pytest.fixture
def db_url() -> Iterator[str]:
    with pg.scratch_database("counts") as url:
        migrate.upgrade(url)
        yield url


@pytest.fixture
def low_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "PG_KEEP_COUNT_FROM", 2)


@asynccontextmanager
async def _database(url: str) -> AsyncIterator[Database]:
    db = Database(url)
    async with db.session() as s:
        await s.execute(insert(User), [
            {"id": u, "username": f"u{u}", "password_hash": "x", "role": "user", "disabled": False,
             "created_at": T0, "updated_at": T0} for u in (1, 2)])
    try:
        yield db
    finally:
        await db.dispose()


async def _create(db: Database, user_id: int, title: str, content: str, type: str = "memory") -> str:
    async with db.session() as s:
        return (await documents.create_document(db=s, user_id=user_id, title=title, content=content,
                                                type=type)).id


async def _update(db: Database, user_id: int, doc_id: str, **changes: str) -> None:
    async with db.session() as s:
        await documents.update_document(db=s, user_id=user_id, document_id=doc_id, changes=changes)


async def _delete(db: Database, user_id: int, doc_id: str) -> None:
    async with db.session() as s:
        await documents.delete_document(db=s, user_id=user_id, document_id=doc_id)


async def _total(db: Database, user_id: int, q: str, type: str | None = None) -> int:
    async with db.session() as s:
        found = await search.search_documents(db=s, user_id=user_id, type=type, q=q, offset=0, limit=5)
        assert found is not None
        return found.total


async def _kept(db: Database) -> Kept:
    async with db.session() as s:
        rows = await s.execute(text("SELECT user_id, type, gram, n FROM agent_document_gram_counts"))
        return {(u, t, g): n for u, t, g, n in rows}


async def _truth(db: Database, kept: Kept) -> Kept:
    """What each kept count should say: the documents whose grams hold the gram, counted afresh."""
    out: Kept = {}
    async with db.session() as s:
        for user_id, type, gram in kept:
            sql = (f"SELECT count(*) FROM agent_documents WHERE user_id = :u AND (:t = '' OR type = :t) "
                   f"AND agentloft_grams({DOC_TEXT}) @> ARRAY[CAST(:g AS text)]")
            out[(user_id, type, gram)] = (await s.execute(text(sql), {"u": user_id, "t": type, "g": gram})).scalar_one()
    return out


async def _exact(db: Database) -> Kept:
    kept = await _kept(db)
    assert kept == await _truth(db, kept)
    return kept


def test_kept_counts_follow_every_write(db_url: str, low_threshold: None) -> None:
    async def main() -> None:
        async with _database(db_url) as db:
            a = await _create(db, 1, "咖啡店", "x")
            b = await _create(db, 1, "Notes", "今天喝了咖啡", "document")
            c = await _create(db, 1, "Tea", "茶")
            await _create(db, 2, "咖啡", "x")  # another user's
            assert await _total(db, 1, "咖啡") == 2
            assert await _total(db, 1, "咖啡", "memory") == 1  # below the threshold: counted, not kept
            assert await _total(db, 1, "咖啡 茶") == 0  # two terms: never kept
            assert await _exact(db) == {(1, "", "咖啡"): 2}

            async with db.session() as s:  # the total now comes from the kept row
                await s.execute(text("UPDATE agent_document_gram_counts SET n = 99"))
            assert await _total(db, 1, "咖啡") == 99
            async with db.session() as s:
                await s.execute(text("UPDATE agent_document_gram_counts SET n = 2"))

            d = await _create(db, 1, "ＡＩ咖啡", "full width")  # folded: "ai咖啡"
            assert await _total(db, 1, "啡") == 3 and await _total(db, 1, "ａｉ") == 1
            assert await _total(db, 1, "咖啡", "memory") == 2
            assert await _exact(db) == {(1, "", "咖啡"): 3, (1, "", "啡"): 3, (1, "memory", "咖啡"): 2}

            await _update(db, 1, c, content="一杯咖啡")  # gains the term
            await _update(db, 1, a, title="Coffee shop")  # loses it
            await _update(db, 1, b, title="咖啡 notes")  # held it already: no change
            await _update(db, 1, d, type="document")  # leaves the memory count only
            await _create(db, 2, "咖啡豆", "y")  # another user's again
            kept = await _exact(db)
            assert kept[(1, "", "咖啡")] == await _total(db, 1, "咖啡") == 3
            assert kept[(1, "memory", "咖啡")] == await _total(db, 1, "咖啡", "memory") == 1

            await _delete(db, 1, b)
            assert (await _exact(db))[(1, "", "咖啡")] == await _total(db, 1, "咖啡") == 2

            async with db.session() as s:
                await s.execute(text("TRUNCATE agent_documents CASCADE"))
            assert await _kept(db) == {}
            assert await _total(db, 1, "咖啡") == 0

    asyncio.run(main())


def test_no_count_is_kept_while_a_write_of_the_user_is_open(db_url: str, low_threshold: None) -> None:
    async def main() -> None:
        async with _database(db_url) as db:
            for i in range(3):
                await _create(db, 1, f"咖啡 {i}", "x")
            async with db.session() as open_write:
                await documents.create_document(db=open_write, user_id=1, title="咖啡 open", content="x")
                assert await _total(db, 1, "咖啡") == 3  # the open write is not seen, and nothing is kept
                assert await _kept(db) == {}
            assert await _total(db, 1, "咖啡") == 4
            assert await _exact(db) == {(1, "", "咖啡"): 4}

    asyncio.run(main())


def test_kept_counts_stay_exact_under_concurrent_writes(db_url: str, low_threshold: None) -> None:
    """Writers create, edit and delete documents while a searcher keeps dropping the counts and making
    them again; no write may fail (no deadlock) and every count ends exact."""
    async def main() -> None:
        async with _database(db_url) as db:
            async def writer(seed: int) -> None:
                rng = random.Random(seed)
                mine: list[str] = []
                for _ in range(25):
                    words = "x" + "".join(rng.choice(["咖啡", "茶", "水", " "]) for _ in range(4))
                    if mine and rng.random() < 0.3:
                        await _update(db, 1, mine[rng.randrange(len(mine))], content=words,
                                      type=rng.choice(["memory", "document"]))
                    elif mine and rng.random() < 0.2:
                        await _delete(db, 1, mine.pop(rng.randrange(len(mine))))
                    else:
                        mine.append(await _create(db, 1, "t", words, rng.choice(["memory", "document"])))

            async def searcher() -> None:
                for i in range(30):
                    if i % 10 == 9:
                        async with db.session() as s:
                            await s.execute(text("DELETE FROM agent_document_gram_counts"))
                    await _total(db, 1, ["咖啡", "茶", "咖"][i % 3], [None, "memory"][i % 2])

            await asyncio.gather(*(writer(seed) for seed in range(4)), searcher())
            for q in ("咖啡", "茶", "咖"):  # whatever the searcher left dropped is kept again
                await _total(db, 1, q)
            kept = await _exact(db)
            assert {(1, "", "咖啡"), (1, "", "茶"), (1, "", "咖")} <= set(kept)

    asyncio.run(main())


def test_counts_kept_per_user_are_bounded(db_url: str, low_threshold: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search, "PG_KEPT_COUNTS", 1)

    async def main() -> None:
        async with _database(db_url) as db:
            for i in range(2):
                await _create(db, 1, f"咖啡茶 {i}", "x")
            assert await _total(db, 1, "咖啡") == 2 and await _total(db, 1, "茶") == 2
            assert await _exact(db) == {(1, "", "咖啡"): 2}

    asyncio.run(main())


def test_two_writes_of_several_documents_never_deadlock(db_url: str, low_threshold: None) -> None:
    """Two transactions each write two documents, holding the kept grams in opposite orders: each would
    hold one count row the other one needs, unless the user's counted writes take turns."""
    async def main() -> None:
        async with _database(db_url) as db:
            for i in range(2):
                await _create(db, 1, f"咖啡 {i}", "x")
                await _create(db, 1, f"茶 {i}", "x")
            assert await _total(db, 1, "咖啡") == 2 and await _total(db, 1, "茶") == 2
            first_done = [asyncio.Event(), asyncio.Event()]
            go = asyncio.Event()

            async def write(i: int, first: str, second: str) -> None:
                async with db.session() as s:
                    await documents.create_document(db=s, user_id=1, title=first, content="x")
                    first_done[i].set()
                    await go.wait()
                    await documents.create_document(db=s, user_id=1, title=second, content="x")

            async def both_under_way() -> None:
                """Once the first has written and the second has too, or waits for a lock."""
                await first_done[0].wait()
                while not first_done[1].is_set():
                    async with db.session() as s:
                        if (await s.execute(text("SELECT count(*) FROM pg_locks WHERE NOT granted"))).scalar_one():
                            break
                    await asyncio.sleep(0.01)
                go.set()

            one = asyncio.create_task(write(0, "咖啡 a", "茶 a"))
            await first_done[0].wait()
            await asyncio.gather(one, write(1, "茶 b", "咖啡 b"), both_under_way())
            assert await _exact(db) == {(1, "", "咖啡"): 4, (1, "", "茶"): 4}

    asyncio.run(main())


def test_deleting_a_user_takes_their_documents_and_counts(db_url: str, low_threshold: None) -> None:
    async def main() -> None:
        async with _database(db_url) as db:
            for user_id in (1, 2):
                for i in range(2):
                    await _create(db, user_id, f"咖啡 {i}", "x")
                assert await _total(db, user_id, "咖啡") == 2
            async with db.session() as s:  # the documents' cascade updates counts the users' cascade deletes
                await s.execute(text("DELETE FROM users WHERE id = 1"))
            assert await _exact(db) == {(2, "", "咖啡"): 2}

    asyncio.run(main())
