"""Stored vectors and their top-k (``knowledge.vectors``) on a real database (SQLite, or PostgreSQL in its
pass): the partial sort against a full one, the cached matrix reused until a vector is written by anyone,
a deleted chunk never returned, a re-indexed file's reused chunk ids never given old vectors, only the
asked model's vectors compared, the cache's bound."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy import delete, insert, update

from agentloft.core.db import Database, utcnow
from agentloft.files.models import File
from agentloft.knowledge import vectors
from agentloft.knowledge.cache import KnowledgeCache, stamps
from agentloft.knowledge.fusion import Ranked
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile
from agentloft.llm.models import ModelConfig
from tests.fakes.embeddings import vector
from tests.pg import database as pg
from tests.support import add_user

TEXTS = ["Backups run nightly at two", "Rotate the signing key every ninety days",
         "The office opens at nine", "知识库检索使用向量", "会议室在三楼"]


@pytest.fixture
async def db(tmp_path: Path, template_db: Path) -> AsyncIterator[Database]:
    if pg.server_url():
        url = os.environ["AGENTLOFT_DATABASE_URL"]  # the test's own clone (tests/conftest.py)
    else:
        shutil.copy(template_db, tmp_path / "v.db")
        url = f"sqlite+aiosqlite:///{tmp_path / 'v.db'}"
    database = Database(url)
    await add_user(database)
    now = utcnow()
    async with database.session() as s:
        for model_id in (1, 2):
            s.add(ModelConfig(id=model_id, name=f"e{model_id}", kind="embedding", provider="openai", model="m",
                              enabled=True, is_default=False))
        for kb in ("kb_a", "kb_b"):
            s.add(KnowledgeCollection(id=kb, user_id=1, name=kb, description=""))
            s.add(File(id=f"fl_{kb}", user_id=1, name="f.txt", media_type="text/plain", size=1, sha256="0" * 64,
                       status="ready", created_at=now))
        await s.flush()
        for kb in ("kb_a", "kb_b"):
            s.add(KnowledgeFile(collection_id=kb, file_id=f"fl_{kb}", status="ready", chunks=len(TEXTS)))
    yield database
    await database.dispose()


async def _chunks(db: Database, kb: str, texts: list[str], model_id: int = 1) -> list[int]:
    """Chunks of the collection's file with the fake model's vectors stored; their ids."""
    async with db.session() as s:
        ids = [(await s.execute(insert(KnowledgeChunk).values(
            collection_id=kb, file_id=f"fl_{kb}", ord=i, page=None, text=t, terms=t)
            .returning(KnowledgeChunk.id))).scalar_one() for i, t in enumerate(texts)]
        await vectors.store(s, collection_id=kb, model_id=model_id, chunk_ids=ids,
                            vectors=vectors.normalised([vector(t) for t in texts]))
    return ids


def _query(text: str) -> np.ndarray:
    return vectors.normalised([vector(text)])[0]


def test_top_agrees_with_a_full_sort() -> None:
    rng = np.random.default_rng(7)
    values = vectors.normalised(rng.standard_normal((500, 32)).tolist())
    matrix = vectors.Matrix(ids=np.arange(100, 600, dtype=np.int64), values=values)
    query = vectors.normalised([rng.standard_normal(32).tolist()])[0]
    expected = np.argsort(-(values @ query), kind="stable")[:10] + 100
    assert [r.chunk_id for r in vectors.top(matrix, query, 10)] == expected.tolist()
    assert len(vectors.top(matrix, query, 1000)) == 500 and vectors.top(matrix, query, 0) == []
    tied = vectors.Matrix(ids=np.array([9, 3, 5], dtype=np.int64), values=np.ones((3, 2), np.float32))
    assert [r.chunk_id for r in vectors.top(tied, np.ones(2, np.float32), 3)] == [3, 5, 9]  # ties by chunk id


def test_normalised_rows_have_length_one_and_zero_stays_zero() -> None:
    values = vectors.normalised([[3.0, 4.0], [0.0, 0.0]])
    assert values.dtype == np.float32 and values.tolist() == [[0.6000000238418579, 0.800000011920929], [0.0, 0.0]]


async def _nearest(cache: KnowledgeCache, db: Database, kbs: list[str], query: np.ndarray, limit: int,
                   model_id: int = 1) -> list[Ranked]:
    async with db.session() as s:
        return await vectors.nearest(cache, s, stamps=await stamps(s, kbs), model_id=model_id, query=query,
                                     limit=limit)


async def test_the_nearest_chunks_come_from_a_matrix_kept_until_a_vector_is_written(db: Database) -> None:
    ids = await _chunks(db, "kb_a", TEXTS)
    cache = KnowledgeCache(max_bytes=10**8)
    hits = await _nearest(cache, db, ["kb_a"], _query("when do backups run"), 2)
    assert hits[0].chunk_id == ids[0] and hits[0].score > hits[1].score
    chinese = await _nearest(cache, db, ["kb_a"], _query("检索"), 1)
    assert chinese[0].chunk_id == ids[3]
    assert cache.loads == 1  # the second search used the kept matrix
    new = await _chunks(db, "kb_a", ["Backups of the database run nightly"])  # another writer's vectors
    hits = await _nearest(cache, db, ["kb_a"], _query("database backups"), 1)
    assert cache.loads == 2 and hits[0].chunk_id == new[0]


async def test_a_deleted_chunk_is_never_returned(db: Database) -> None:
    ids = await _chunks(db, "kb_a", TEXTS)
    cache = KnowledgeCache(max_bytes=10**8)
    query = _query("backups nightly")
    assert (await _nearest(cache, db, ["kb_a"], query, 1))[0].chunk_id == ids[0]
    async with db.session() as s:  # its vector goes by cascade, and nothing else changes
        await s.execute(delete(KnowledgeChunk).where(KnowledgeChunk.id == ids[0]))
    hits = await _nearest(cache, db, ["kb_a"], query, 3)
    assert ids[0] not in [h.chunk_id for h in hits] and len(hits) == 3 and cache.loads == 2


async def test_a_reindexed_file_never_lends_an_old_vector_to_a_new_chunk(db: Database) -> None:
    """SQLite reuses the highest chunk id after a delete; a matrix kept across the re-index would give
    the new chunk there the old one's vector, which the existence check cannot see."""
    ids = await _chunks(db, "kb_a", TEXTS)
    async with db.session() as s:  # re-embedded: the last chunk's vector is no longer the newest
        await vectors.store(s, collection_id="kb_a", model_id=1, chunk_ids=ids[:-1],
                            vectors=vectors.normalised([vector(t) for t in TEXTS[:-1]]))
    cache = KnowledgeCache(max_bytes=10**8)
    query = _query(TEXTS[-1])
    assert (await _nearest(cache, db, ["kb_a"], query, 1))[0].chunk_id == ids[-1]
    async with db.session() as s:  # the file re-indexed as knowledge.jobs does, its new chunk not embedded yet
        await s.execute(delete(KnowledgeChunk).where(KnowledgeChunk.id == ids[-1]))
        new = (await s.execute(insert(KnowledgeChunk).values(
            collection_id="kb_a", file_id="fl_kb_a", ord=9, page=None, text="Parking is free", terms="parking")
            .returning(KnowledgeChunk.id))).scalar_one()
        await s.execute(update(KnowledgeFile).where(KnowledgeFile.collection_id == "kb_a").values(chunks=5))
    hits = await _nearest(cache, db, ["kb_a"], query, 5)
    assert new not in [h.chunk_id for h in hits] and len(hits) == 4 and cache.loads == 2


async def test_only_the_asked_model_and_collections_are_compared(db: Database) -> None:
    a = await _chunks(db, "kb_a", TEXTS[:2], model_id=1)
    b = await _chunks(db, "kb_b", TEXTS[:2], model_id=2)
    b1 = await _chunks(db, "kb_b", TEXTS[2:3], model_id=1)
    cache = KnowledgeCache(max_bytes=10**8)
    both = await _nearest(cache, db, ["kb_a", "kb_b"], _query("backups"), 10)
    only_b = await _nearest(cache, db, ["kb_b"], _query("backups"), 10, model_id=2)
    assert sorted(h.chunk_id for h in both) == sorted(a + b1)
    assert [h.chunk_id for h in only_b] == b


async def test_a_collection_larger_than_the_cache_is_scanned_each_time(db: Database) -> None:
    await _chunks(db, "kb_a", TEXTS)
    small = KnowledgeCache(max_bytes=100)  # less than one collection's matrix
    query = _query("signing key")
    first = await _nearest(small, db, ["kb_a"], query, 3)
    second = await _nearest(small, db, ["kb_a"], query, 3)
    async with db.session() as s:
        scanned = await vectors.scan_top(s, "kb_a", 1, query, 3)
    assert first == second == scanned and small.loads == 1 and small.nbytes == 0  # then scanned, not kept


async def test_the_least_recently_searched_collection_leaves_a_full_cache(db: Database) -> None:
    await _chunks(db, "kb_a", TEXTS)
    await _chunks(db, "kb_b", TEXTS)
    query = _query("office")
    one = len(TEXTS) * (256 * 4 + 8)  # a collection's matrix: float32 rows and int64 ids
    cache = KnowledgeCache(max_bytes=one + one // 2)
    for kb in ("kb_a", "kb_b", "kb_b", "kb_a"):
        await _nearest(cache, db, [kb], query, 1)
    assert cache.loads == 3 and cache.nbytes == one  # kb_a was dropped for kb_b, then read again


async def test_searches_arriving_together_load_an_entry_once() -> None:
    loads: list[str] = []

    async def slow_load() -> vectors.Matrix:
        loads.append("kb_a")
        await asyncio.sleep(0.01)  # the others arrive meanwhile
        return vectors.Matrix(ids=np.array([1], dtype=np.int64), values=np.ones((1, 2), np.float32))

    cache = KnowledgeCache(max_bytes=10**8)
    got = await asyncio.gather(*(cache.get(("vectors", "kb_a"), 1, slow_load) for _ in range(4)))
    assert loads == ["kb_a"] and all(m is got[0] for m in got)
