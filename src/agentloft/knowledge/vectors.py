"""Stored chunk vectors and the nearest chunks to a query, computed in this process with numpy.

Storage: ``knowledge_vectors`` holds one L2-normalised float32 vector per chunk (little-endian, in a blob),
with the model that made it (migration 0025). No vector extension: pgvector cannot be installed from
these machines' package sources, and SQLite's vector extensions need extension loading, which the
machine's Python lacks.

Top-k: the cosine of unit vectors is their dot product, so the nearest chunks of a collection are one
matrix-vector product over its vectors and a partial sort (``np.argpartition``). Where the matrix comes from:

- **Cached** (``VectorIndex``, the default): each collection's vectors of the chosen model are loaded once
  into a matrix kept in memory, least recently used dropped beyond ``AGENTLOFT_KNOWLEDGE_VECTOR_CACHE_MB``.
  Before each use one indexed read takes the collection's newest vector id; vector rows are only ever
  inserted with a new, growing id (migration 0025), so a write by any process (this one's embedding job,
  another worker's) changes it and the matrix is loaded again. A vector deleted by cascade (its chunk's
  file re-indexed or removed) changes nothing there, so the best chunks found are checked to still exist;
  one that does not drops the matrix and the search runs again on a fresh one.
- **Scanned** (``scan_top``): the collection's vectors read from the database on every query, then the
  same numpy product. It is what a collection larger than the whole cache gets, and the baseline the
  cached path is measured against.

Measured (``bench/knowledge_vectors.py``, docs/benchmarks.md; 256 values per vector, medians, second
run): reading a collection's vectors per query made a vector search 147 ms at 10,000 vectors and 2.4 s
at 100,000 on SQLite (1.9 s on PostgreSQL), against 29 ms and 37 ms cached (51 ms on PostgreSQL),
embedding the query over HTTP included in both: 5x at 10,000, 38-65x at 100,000. The cache costs ~100 MB
of memory per 100,000 vectors of 256 values (~600 MB at 1,536), hence its bound. The product is
``np.einsum``, not ``@``: ``@`` hands a matrix-vector product to OpenBLAS, which starts a thread per core
and, on this shared 2-core machine, took 12-18 ms for 10,000 × 256 where ``einsum``'s loop in the calling
thread takes 1.2 ms (and leaves the other core to the other requests). A product over more than
``THREAD_FROM`` values runs in a worker thread (numpy releases the GIL), so one large search does not
stall the event loop.

numpy is imported here only: ``knowledge.embedding`` imports this module once an embedding model is
chosen, so an instance without one never loads it (~16 MB resident, ~150 ms).
"""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.knowledge.fusion import Ranked
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeVector

if TYPE_CHECKING:
    from agentloft.core.runtime import Runtime

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
    """One collection's vectors of one model: chunk ids and the rows, and the newest vector id read."""

    newest: int
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


async def newest_id(db: AsyncSession, collection_id: str) -> int:
    """The collection's newest vector id (0 for none): one step down ``idx_knowledge_vectors_collection``."""
    stmt = select(func.max(KnowledgeVector.id)).where(KnowledgeVector.collection_id == collection_id)
    return int((await db.execute(stmt)).scalar_one() or 0)


async def load(db: AsyncSession, collection_id: str, model_id: int, dim: int) -> Matrix:
    """The collection's vectors of the model (those of length ``dim``) as a matrix."""
    newest = await newest_id(db, collection_id)
    rows = (await db.execute(
        select(KnowledgeVector.chunk_id, KnowledgeVector.vector)
        .where(KnowledgeVector.collection_id == collection_id, KnowledgeVector.model_id == model_id,
               KnowledgeVector.dim == dim)
        .order_by(KnowledgeVector.chunk_id))).all()
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    values = np.frombuffer(b"".join(r[1] for r in rows), dtype=DTYPE).reshape(len(rows), dim)
    return Matrix(newest, ids, values.astype(np.float32, copy=False))


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


class VectorIndex:
    """The matrices of the collections searched lately, up to ``max_bytes`` (the module's doc: "Cached")."""

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._sets: OrderedDict[tuple[str, int, int], Matrix] = OrderedDict()
        self._locks: dict[tuple[str, int, int], asyncio.Lock] = {}
        self.loads = 0
        """How often a matrix was read from the database (tests and the benchmark watch it)."""
        self.down_until: dict[int, float] = {}
        """Embedding model id -> when searches may ask it again after it failed (``knowledge.embedding``)."""

    @property
    def nbytes(self) -> int:
        return sum(m.nbytes for m in self._sets.values())

    async def matrix(self, db: AsyncSession, collection_id: str, model_id: int, dim: int) -> Matrix:
        """The collection's current matrix: the kept one if no vector was written since, else read now."""
        key = (collection_id, model_id, dim)
        async with self._locks.setdefault(key, asyncio.Lock()):  # searches arriving together read it once
            newest = await newest_id(db, collection_id)
            kept = self._sets.get(key)
            if kept is not None and kept.newest == newest:
                self._sets.move_to_end(key)
                return kept
            self._sets.pop(key, None)
            fresh = await load(db, collection_id, model_id, dim)
            self.loads += 1
            self._keep(key, fresh)
            return fresh

    def _keep(self, key: tuple[str, int, int], matrix: Matrix) -> None:
        if matrix.nbytes > self.max_bytes:
            return  # larger than the whole cache: scanned on every query instead
        self._sets[key] = matrix
        while self.nbytes > self.max_bytes:
            self._sets.popitem(last=False)

    def drop(self, collection_id: str) -> None:
        for key in [k for k in self._sets if k[0] == collection_id]:
            del self._sets[key]
            self._locks.pop(key, None)

    async def nearest(self, db: AsyncSession, *, collection_ids: Sequence[str], model_id: int, query: Floats,
                      limit: int) -> list[Ranked]:
        """The ``limit`` chunks of the collections nearest to ``query``, best first, all still existing."""
        hits = await self._nearest(db, collection_ids, model_id, query, limit)
        if len(await existing(db, [h.chunk_id for h in hits])) == len(hits):
            return hits
        for collection_id in collection_ids:  # a chunk was deleted since its matrix was read: read again
            self.drop(collection_id)
        hits = await self._nearest(db, collection_ids, model_id, query, limit)
        alive = await existing(db, [h.chunk_id for h in hits])
        return [h for h in hits if h.chunk_id in alive]

    async def _nearest(self, db: AsyncSession, collection_ids: Sequence[str], model_id: int, query: Floats,
                       limit: int) -> list[Ranked]:
        hits: list[Ranked] = []
        for collection_id in dict.fromkeys(collection_ids):
            matrix = await self.matrix(db, collection_id, model_id, len(query))
            hits.extend(await top_async(matrix, query, limit))
        hits.sort(key=lambda h: (-h.score, h.chunk_id))
        return hits[:limit]


def index_of(rt: Runtime) -> VectorIndex:
    """The process's vector cache, made on first use (so numpy loads only when vectors are searched)."""
    if rt.vector_index is None:
        rt.vector_index = VectorIndex(max_bytes=rt.settings.knowledge_vector_cache_mb * 1024 * 1024)
    return rt.vector_index
