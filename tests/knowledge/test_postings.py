"""Lexical ranking from postings kept in memory (``knowledge.postings`` through ``knowledge.search``) on a
real database (SQLite, or PostgreSQL in its pass): the same top k as BM25 computed chunk by chunk (and
as SQLite FTS5's own ranking), kept until another session changes the collection's files, the cache's
bound with the SQL ranking behind it, and never a chunk of a collection that was not asked."""

from __future__ import annotations

import asyncio
import math
import os
import shutil
from collections import Counter
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import numpy as np
import pytest
from sqlalchemy import delete, insert, select, text

from agentloft.core.db import Database, utcnow
from agentloft.core.runtime import Runtime
from agentloft.files.models import File
from agentloft.knowledge import jobs as index_jobs
from agentloft.knowledge import postings, search
from agentloft.knowledge.cache import KnowledgeCache, stamps
from agentloft.knowledge.fusion import Ranked
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile
from agentloft.knowledge.terms import query_tokens, terms
from tests.pg import database as pg
from tests.support import add_user, wait_until

WORDS = [f"w{i}" for i in range(300)]
CHUNKS = 400


def _texts(seed: int, count: int, words: int = 30) -> list[str]:
    """Zipf-drawn words, so a few are in most texts (the ones the ranking leaves out)."""
    ranks = np.minimum(np.random.default_rng(seed).zipf(1.3, size=(count, words)), len(WORDS)) - 1
    return [" ".join(WORDS[i] for i in row) for row in ranks]


@pytest.fixture
async def db(tmp_path: Path, template_db: Path) -> AsyncIterator[Database]:
    if pg.server_url():
        url = os.environ["AGENTLOFT_DATABASE_URL"]  # the test's own clone (tests/conftest.py)
    else:
        shutil.copy(template_db, tmp_path / "p.db")
        url = f"sqlite+aiosqlite:///{tmp_path / 'p.db'}"
    database = Database(url)
    await add_user(database)
    async with database.session() as s:
        for kb in ("kb_a", "kb_b"):
            s.add(KnowledgeCollection(id=kb, user_id=1, name=kb, description=""))
    yield database
    await database.dispose()


async def _file(db: Database, kb: str, file_id: str, texts: Sequence[str]) -> list[int]:
    """A file of the collection with these chunks, as ``knowledge.jobs`` leaves it; the chunk ids."""
    async with db.session() as s:
        s.add(File(id=file_id, user_id=1, name=f"{file_id}.txt", media_type="text/plain", size=1,
                   sha256="0" * 64, status="ready", created_at=utcnow()))
        await s.flush()
        s.add(KnowledgeFile(collection_id=kb, file_id=file_id, status="ready", chunks=len(texts)))
        await s.flush()
        return [(await s.execute(insert(KnowledgeChunk).values(
            collection_id=kb, file_id=file_id, ord=i, page=None, text=t, terms=terms(t))
            .returning(KnowledgeChunk.id))).scalar_one() for i, t in enumerate(texts)]


async def _lexical(cache: KnowledgeCache, db: Database, kbs: list[str], q: str, limit: int = 10) -> list[Ranked]:
    async with db.session() as s:
        return await search.lexical(cache, s, stamps=await stamps(s, kbs), tokens=query_tokens(q), limit=limit)


def _bm25(docs: dict[int, str], tokens: Sequence[str], limit: int) -> list[int]:
    """BM25 as FTS5 defines it, chunk by chunk, with the tokens most chunks hold left out as
    ``search.common_left_out`` does: the reference the postings must agree with."""
    counted = {cid: Counter(t.split()) for cid, t in docs.items()}
    n = len(docs)
    avgdl = sum(sum(c.values()) for c in counted.values()) / n
    df = {t: sum(1 for c in counted.values() if t in c) for t in tokens}

    def idf(t: str) -> float:
        return max(math.log((n - df[t] + 0.5) / (df[t] + 0.5)), 0.0) or 1e-6

    def ranked(kept: Sequence[str]) -> list[int]:
        scores: dict[int, float] = {}
        for cid, c in counted.items():
            norm = 1.2 * (0.25 + 0.75 * sum(c.values()) / avgdl)
            if held := [t for t in kept if t in c]:
                scores[cid] = sum(idf(t) * c[t] * 2.2 / (c[t] + norm) for t in held)
        return [cid for cid, _ in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[:limit]]

    kept = search.selective(tokens, {t: df[t] / n for t in tokens})
    return ranked(kept) or ranked(tokens)


async def test_the_kept_postings_rank_as_bm25_and_as_fts5(db: Database) -> None:
    texts = _texts(1, CHUNKS)
    ids = await _file(db, "kb_a", "fl_a", texts)
    docs = {cid: terms(t) for cid, t in zip(ids, texts, strict=True)}
    cache = KnowledgeCache(max_bytes=10**8)
    queries = [" ".join(t.split()[:3]) for t in _texts(2, 40)] + ["w0 w1", "w0 nowhere", "w299 w7 w0"]
    for q in queries:
        got = await _lexical(cache, db, ["kb_a"], q)
        assert [h.chunk_id for h in got] == _bm25(docs, query_tokens(q), 10), q
        if not pg.server_url():  # one collection alone in the database: FTS5's statistics are the same
            async with db.session() as s:
                fts5 = await search.lexical_ranking(s, collection_ids=["kb_a"], tokens=query_tokens(q), limit=10)
            assert [h.chunk_id for h in got] == [h.chunk_id for h in fts5], q
            assert [h.score for h in got] == pytest.approx([h.score for h in fts5], rel=1e-9)
    assert cache.loads == 1  # every search but the first from the kept postings


async def test_a_file_added_or_removed_by_another_worker_is_seen_by_the_next_search(db: Database) -> None:
    await _file(db, "kb_a", "fl_a", _texts(1, 50))
    cache = KnowledgeCache(max_bytes=10**8)
    assert await _lexical(cache, db, ["kb_a"], "zebra") == []
    other = Database(db.url)  # another worker's connection to the same database
    try:
        added = await _file(other, "kb_a", "fl_new", ["zebra crossing", "zebra"])
        assert {h.chunk_id for h in await _lexical(cache, db, ["kb_a"], "zebra")} == set(added)
        async with other.session() as s:  # removing the file from the collection deletes its chunks
            await s.execute(delete(KnowledgeFile).where(KnowledgeFile.file_id == "fl_new"))
    finally:
        await other.dispose()
    assert await _lexical(cache, db, ["kb_a"], "zebra") == []
    assert cache.loads == 3


async def test_postings_larger_than_the_cache_leave_the_ranking_to_sql(db: Database) -> None:
    await _file(db, "kb_a", "fl_a", _texts(1, 100))
    small = KnowledgeCache(max_bytes=1000)  # less than the collection's postings
    for q in ("w3 w5", "w8 w2 w40"):
        got = await _lexical(small, db, ["kb_a"], q)
        async with db.session() as s:
            assert await search.cached_lexical(
                small, s, stamps=await stamps(s, ["kb_a"]), tokens=query_tokens(q), limit=10) is None
            assert got == await search.lexical_ranking(s, collection_ids=["kb_a"], tokens=query_tokens(q), limit=10)
    assert small.loads == 1 and small.nbytes == 0  # built once, found too large, then not again


async def test_the_least_recently_searched_collection_leaves_a_full_cache(db: Database) -> None:
    await _file(db, "kb_a", "fl_a", _texts(1, 100))
    await _file(db, "kb_b", "fl_b", _texts(1, 100))
    async with db.session() as s:
        one = (await postings.load(s, "kb_a")).nbytes
    cache = KnowledgeCache(max_bytes=one + one // 2)
    for kb in ("kb_a", "kb_b", "kb_b", "kb_a"):
        assert await _lexical(cache, db, [kb], "w1 w2")
    assert cache.loads == 3 and cache.nbytes == one  # kb_a was dropped for kb_b, then read again


async def test_a_search_sees_only_the_collections_it_asked_for(db: Database) -> None:
    a = await _file(db, "kb_a", "fl_a", _texts(1, 60))
    b = await _file(db, "kb_b", "fl_b", _texts(3, 60))
    cache = KnowledgeCache(max_bytes=10**8)
    only_a = await _lexical(cache, db, ["kb_a"], "w1 w4 w9", limit=200)
    both = await _lexical(cache, db, ["kb_a", "kb_b"], "w1 w4 w9", limit=200)
    assert only_a and {h.chunk_id for h in only_a} <= set(a)
    assert {h.chunk_id for h in both} & set(b) and {h.chunk_id for h in both} <= set(a) | set(b)
    assert await _lexical(cache, db, [], "w1") == []


async def test_a_file_indexed_again_with_as_many_chunks_is_seen_by_the_next_search(db: Database) -> None:
    """The index job stamps the file's entry even when its state and chunk count stay the same."""
    await _file(db, "kb_a", "fl_a", ["the old text", "more old text"])
    cache = KnowledgeCache(max_bytes=10**8)
    assert len(await _lexical(cache, db, ["kb_a"], "old")) == 2
    rows = [{"collection_id": "kb_a", "file_id": "fl_a", "ord": i, "page": None, "text": t, "terms": terms(t)}
            for i, t in enumerate(["the new text", "more new text"])]
    await index_jobs._replace_chunks(cast(Runtime, SimpleNamespace(db=db)), "kb_a", "fl_a", rows)
    assert await _lexical(cache, db, ["kb_a"], "old") == []
    assert len(await _lexical(cache, db, ["kb_a"], "new")) == 2


async def _blocked_on_a_lock(db: Database) -> bool:
    """Whether a session of this test's database waits for a lock (PostgreSQL's view of its backends)."""
    async with db.session() as s:
        return bool((await s.execute(text(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'"
        ))).scalar_one())


@pytest.mark.skipif(not pg.server_url(), reason="concurrent writers are PostgreSQL's; SQLite writes one at a time")
async def test_two_runs_of_a_files_index_job_at_once_leave_its_chunks_once(
        db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """A job whose lease ran out while it ran is run again meanwhile: the second run must wait for the
    first's transaction, or its delete misses the first's new chunks and both sets stay."""
    await _file(db, "kb_a", "fl_a", ["the old text"])
    inside, release, arrived = asyncio.Event(), asyncio.Event(), []
    after_indexed = index_jobs.embedding.after_indexed

    async def paused(s: Any, **kw: Any) -> None:  # the first run holds its transaction open here
        arrived.append(True)
        if len(arrived) == 1:
            inside.set()
            await release.wait()
        await after_indexed(s, **kw)

    monkeypatch.setattr(index_jobs.embedding, "after_indexed", paused)
    rt = cast(Runtime, SimpleNamespace(db=db))
    rows = [{"collection_id": "kb_a", "file_id": "fl_a", "ord": i, "page": None, "text": t, "terms": terms(t)}
            for i, t in enumerate(["new one", "new two", "new three"])]
    first = asyncio.create_task(index_jobs._replace_chunks(rt, "kb_a", "fl_a", rows))
    await asyncio.wait_for(inside.wait(), 10)
    second = asyncio.create_task(index_jobs._replace_chunks(rt, "kb_a", "fl_a", rows))
    # the second run waits for the lock, or (were there none) reached the pause itself
    await wait_until(lambda: len(arrived) == 2 or _blocked_on_a_lock(db), limit_s=10, every_s=0.02)
    release.set()
    await asyncio.gather(first, second)
    async with db.session() as s:
        texts = (await s.execute(select(KnowledgeChunk.text).where(KnowledgeChunk.file_id == "fl_a"))).scalars()
        assert sorted(texts) == ["new one", "new three", "new two"]
        assert (await s.get(KnowledgeFile, ("kb_a", "fl_a"))).chunks == 3
