"""Stored chunk vectors and the nearest chunks to a query, computed in this process with numpy.

Storage: ``knowledge_vectors`` holds one L2-normalised float32 vector per chunk (little-endian, in a blob),
with the model that made it (migration 0025). No vector extension: pgvector cannot be installed from
these machines' package sources, and SQLite's vector extensions need extension loading, which the
machine's Python lacks.

Top-k: the cosine of unit vectors is their dot product, so the nearest chunks of a collection are one
matrix-vector product over its vectors and a partial sort (``np.argpartition``). Where the matrix comes from:

- **Cached** (``nearest``, the default): each collection's vectors of the chosen model are loaded once
  into a matrix kept in ``knowledge.cache`` beside the collection's term postings, under one bound
  (``AGENTLOFT_KNOWLEDGE_CACHE_MB``). Before each search one read per collection takes its stamp (its
  newest vector id, and its files' state: ``knowledge.cache``), so a write by any process (this one's
  embedding job, another worker's) loads the matrix again. A vector deleted by cascade while nothing else
  changed (an admin's model change) is caught by checking the best chunks found still exist; one that
  does not drops the matrix and the search runs again on a fresh one.
- **Scanned** (``scan_top``): the collection's vectors read from the database on every query, then the
  same numpy product. It is what a collection larger than the whole cache gets, and the baseline the
  cached path is measured against.

Measured (``bench/knowledge.py``, docs/benchmarks.md; 256 values per vector, medians, second
run): reading a collection's vectors per query made a vector search 147 ms at 10,000 vectors and 2.4 s
at 100,000 on SQLite (1.9 s on PostgreSQL), against 29 ms and 37 ms cached (51 ms on PostgreSQL),
embedding the query over HTTP included in both: 5x at 10,000, 38-65x at 100,000. The cache costs ~100 MB
of memory per 100,000 vectors of 256 values (~600 MB at 1,536), hence its bound. The product is
``np.einsum``, not ``@``: ``@`` hands a matrix-vector product to OpenBLAS, which starts a thread per core
and, on this shared 2-core machine, took 12-18 ms for 10,000 × 256 where ``einsum``'s loop in the calling
thread takes 1.2 ms (and leaves the other core to the other requests). A product over more than
``THREAD_FROM`` values runs in a worker thread (numpy releases the GIL), so one large search does not
stall the event loop.

numpy (~16 MB resident, ~150 ms to import) loads with the first knowledge search (here or in
``knowledge.postings``), never at start-up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from sqlalchemy import delete, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.knowledge.cache import KnowledgeCache, Stamp
from agentloft.knowledge.fusion import Ranked
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeVector

log = logging.getLogger(__name__)

DTYPE = np.dtype("<f4")
THREAD_FROM = 4_000_000  # values in a matrix (rows × dim) above which the product runs in a thread
Floats = npt.NDArray[np.float32]
Ids = npt.NDArray[np.int64]


def normalised(vectors: Sequence[Sequence[float]]) -> Floats:
    """The vectors as rows of a float32 matrix, each scaled to length 1 (an all-zero row stays zero)."""
    values = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(values, axis=1, keepdims=True)
    return (values / np.where(norms == 0, np.float32(1.0), norms)).astype(np.float32, copy=False)


def to_blob(vector: Floats) -> bytes:
    return vector.astype(DTYPE).tobytes()


@dataclass(frozen=True)
class Matrix:
    """One collection's vectors of one model: chunk ids and the rows."""

    ids: Ids
    values: Floats

    @property
    def nbytes(self) -> int:
        return int(self.values.nbytes + self.ids.nbytes)


def top(matrix: Matrix, query: Floats, limit: int) -> list[Ranked]:
    """The ``limit`` rows nearest to ``query`` (a unit vector), best first; equal scores in chunk id order
    (which of several equal ones at the cut makes it in is not defined)."""
    if not len(matrix.ids) or limit <= 0:
        return []
    scores = np.einsum("ij,j->i", matrix.values, query)  # in this thread, not BLAS's (the module's doc)
    picked = np.argpartition(-scores, limit - 1)[:limit] if limit < len(scores) else np.arange(len(scores))
    order = picked[np.lexsort((matrix.ids[picked], -scores[picked]))]
    return [Ranked(int(matrix.ids[i]), float(scores[i])) for i in order]


async def top_async(matrix: Matrix, query: Floats, limit: int) -> list[Ranked]:
    if matrix.values.size > THREAD_FROM:
        return await asyncio.to_thread(top, matrix, query, limit)
    return top(matrix, query, limit)


# --- reading and writing -------------------------------------------------------------------------------


async def load(db: AsyncSession, collection_id: str, model_id: int, dim: int) -> Matrix:
    """The collection's vectors of the model (those of length ``dim``) as a matrix."""
    rows = (await db.execute(
        select(KnowledgeVector.chunk_id, KnowledgeVector.vector)
        .where(KnowledgeVector.collection_id == collection_id, KnowledgeVector.model_id == model_id,
               KnowledgeVector.dim == dim)
        .order_by(KnowledgeVector.chunk_id))).all()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    values = np.frombuffer(b"".join(r[1] for r in rows), dtype=DTYPE).reshape(len(rows), dim)
    return Matrix(ids, values.astype(np.float32, copy=False))


async def scan_top(db: AsyncSession, collection_id: str, model_id: int, query: Floats, limit: int) -> list[Ranked]:
    """The nearest chunks with the collection's vectors read now (the module's doc: "Scanned")."""
    return await top_async(await load(db, collection_id, model_id, len(query)), query, limit)


async def existing(db: AsyncSession, chunk_ids: Sequence[int]) -> set[int]:
    if not chunk_ids:
        return set()
    stmt = select(KnowledgeChunk.id).where(KnowledgeChunk.id.in_(list(chunk_ids)))
    return set((await db.execute(stmt)).scalars())


async def store(db: AsyncSession, *, collection_id: str, model_id: int, chunk_ids: Sequence[int],
                vectors: Floats) -> int:
    """Write the chunks' vectors, replacing any they had; chunks deleted meanwhile are skipped. Returns how
    many were written."""
    alive = await existing(db, chunk_ids)
    rows = [{"chunk_id": cid, "collection_id": collection_id, "model_id": model_id, "dim": int(vectors.shape[1]),
             "vector": to_blob(vectors[i])} for i, cid in enumerate(chunk_ids) if cid in alive]
    if not rows:
        return 0
    await db.execute(delete(KnowledgeVector).where(KnowledgeVector.chunk_id.in_([r["chunk_id"] for r in rows])))
    await db.execute(insert(KnowledgeVector), rows)
    return len(rows)


# --- the cache -------------------------------------------------------------------------------------------


async def matrix(cache: KnowledgeCache, db: AsyncSession, collection_id: str, model_id: int, dim: int,
                 stamp: Stamp) -> Matrix | None:
    """The collection's matrix as of ``stamp`` (``knowledge.cache``); None when it is larger than the cache."""
    return await cache.get(("vectors", collection_id, model_id, dim), stamp,
                           lambda: load(db, collection_id, model_id, dim))


async def _nearest(cache: KnowledgeCache, db: AsyncSession, stamps: dict[str, Stamp], model_id: int,
                   query: Floats, limit: int) -> list[Ranked]:
    hits: list[Ranked] = []
    for collection_id, stamp in stamps.items():
        kept = await matrix(cache, db, collection_id, model_id, len(query), stamp)
        hits.extend(await (top_async(kept, query, limit) if kept is not None
                           else scan_top(db, collection_id, model_id, query, limit)))
    hits.sort(key=lambda h: (-h.score, h.chunk_id))
    return hits[:limit]


async def nearest(cache: KnowledgeCache, db: AsyncSession, *, stamps: dict[str, Stamp], model_id: int,
                  query: Floats, limit: int) -> list[Ranked]:
    """The ``limit`` chunks of the stamped collections nearest to ``query``, best first, all still existing
    (the module's doc: "Cached")."""
    hits = await _nearest(cache, db, stamps, model_id, query, limit)
    if len(await existing(db, [h.chunk_id for h in hits])) == len(hits):
        return hits
    for collection_id in stamps:  # a chunk was deleted since its matrix was read: read again
        cache.drop("vectors", collection_id)
    hits = await _nearest(cache, db, stamps, model_id, query, limit)
    alive = await existing(db, [h.chunk_id for h in hits])
    return [h for h in hits if h.chunk_id in alive]
