"""What knowledge search keeps in memory per collection (term postings, ``knowledge.postings``; vector
matrices, ``knowledge.vectors``), how each entry is known to be current, and the one bound on all of it.

Freshness: before each search one read per asked collection (``stamps``) takes the state of its files
(how many, their chunk total, the newest change of any of them: a file's entry is written in the
transaction that replaces its chunks, ``knowledge.jobs``) and the collection's newest vector id (vector rows
are only inserted, with a growing id, migration 0025). A write by any process (this one's job, another
worker's) changes that stamp, so the database stays the source of truth and several workers stay right.
Postings compare the files' part, matrices the whole stamp: a vector matrix is therefore also read again
when chunks were replaced, which matters on SQLite, where ``knowledge_chunks`` ids are reused after a
delete (no AUTOINCREMENT) and a matrix kept across a re-index could give a new chunk an old chunk's vector.
An entry loaded after the stamp was read can only be newer than it; the next search then loads it again.

Bound: ``AGENTLOFT_KNOWLEDGE_CACHE_MB`` over every entry, least recently used dropped first. An entry
larger than the whole bound is not kept nor used, and ``get`` remembers that for the stamp it was loaded
at, so the caller's other way (the SQL ranking, a vector scan) answers every search of it, without loading
it again each time.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.knowledge.models import KnowledgeFile, KnowledgeVector

if TYPE_CHECKING:
    from agentloft.core.runtime import Runtime


@dataclass(frozen=True)
class Stamp:
    """A collection's state as one freshness read saw it (the module's doc)."""

    files: tuple[int, int, datetime | None]
    """File entries, their chunk total, the newest change of any of them."""
    vectors: int
    """The newest vector id (0 for none)."""


class Entry(Protocol):
    @property
    def nbytes(self) -> int: ...


E = TypeVar("E", bound=Entry)
Key = tuple[Hashable, ...]
"""(kind, collection id, anything else that tells entries of one collection apart)."""


async def stamp(db: AsyncSession, collection_id: str) -> Stamp:
    """One indexed read: the collection's file entries (primary key range) and its newest vector id (one
    step down ``idx_knowledge_vectors_collection``)."""
    newest = (select(func.max(KnowledgeVector.id)).where(KnowledgeVector.collection_id == collection_id)
              .scalar_subquery())
    row = (await db.execute(
        select(func.count(), func.coalesce(func.sum(KnowledgeFile.chunks), 0), func.max(KnowledgeFile.updated_at),
               newest).where(KnowledgeFile.collection_id == collection_id))).one()
    return Stamp(files=(int(row[0]), int(row[1]), row[2]), vectors=int(row[3] or 0))


async def stamps(db: AsyncSession, collection_ids: Sequence[str]) -> dict[str, Stamp]:
    return {c: await stamp(db, c) for c in dict.fromkeys(collection_ids)}


class KnowledgeCache:
    """Entries keyed by a tuple whose first item after the kind is the collection id, each with the
    version (part of a ``Stamp``) it was loaded at, up to ``max_bytes`` in all."""

    def __init__(self, *, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Key, tuple[Hashable, Entry]] = OrderedDict()
        self._too_large: dict[Key, Hashable] = {}
        self._locks: dict[Key, asyncio.Lock] = {}
        self.loads = 0
        """How often an entry was read from the database (tests and the benchmark watch it)."""
        self.down_until: dict[int, float] = {}
        """Embedding model id -> when searches may ask it again after it failed (``knowledge.embedding``)."""

    @property
    def nbytes(self) -> int:
        return sum(entry.nbytes for _, entry in self._entries.values())

    async def get(self, key: Key, version: Hashable,
                  load: Callable[[], Awaitable[E]]) -> E | None:
        """The entry for ``key`` at ``version``: the kept one, else loaded now (searches arriving together
        load it once). None when it is larger than the bound at this version, from the first time on, so
        that every search of such a collection is answered the same other way."""
        async with self._locks.setdefault(key, asyncio.Lock()):
            kept = self._entries.get(key)
            if kept is not None and kept[0] == version:
                self._entries.move_to_end(key)
                return cast(E, kept[1])  # one key's loader makes one type
            if self._too_large.get(key, object()) == version:
                return None
            self._entries.pop(key, None)
            fresh = await load()
            self.loads += 1
            return fresh if self._keep(key, version, fresh) else None

    def _keep(self, key: Key, version: Hashable, entry: Entry) -> bool:
        self._too_large.pop(key, None)
        if entry.nbytes > self.max_bytes:
            self._too_large[key] = version
            return False
        self._entries[key] = (version, entry)
        while self.nbytes > self.max_bytes:
            self._entries.popitem(last=False)
        return True

    def drop(self, kind: str, collection_id: str) -> None:
        """Forget the collection's entries of one kind, whatever their version."""
        for key in [k for k in self._entries if k[:2] == (kind, collection_id)]:
            del self._entries[key]


def cache_of(rt: Runtime) -> KnowledgeCache:
    """The process's knowledge cache, made on the first search (so numpy loads only when one runs)."""
    if rt.knowledge_cache is None:
        rt.knowledge_cache = KnowledgeCache(max_bytes=rt.settings.knowledge_cache_mb * 1024 * 1024)
    return rt.knowledge_cache
