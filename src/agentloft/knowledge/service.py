"""Knowledge service: a user's collections, the files in them, and searching them.

Every function that serves a user takes the owner's id and every query filters by it: another user's
collection is as missing as one that never existed (``404 knowledge_not_found``). Files are added by
reference and must be the user's own (``404 file_not_found`` otherwise, from the files service). Adding a
file marks it ``processing`` and queues a ``knowledge.index`` job in the same transaction
(``knowledge.jobs``); adding a file that is already there changes nothing, except that a ``failed`` one is
tried again, which is what pressing "add" once more means to whoever sees it failed.

A collection's ``status`` is ``processing`` while any of its files is, else ``ready``; each file keeps
its own state and, when it failed, why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Select, case, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.core import jobs
from agentloft.core.db import one_or_404, rows_matched, utcnow
from agentloft.files import service as files_service
from agentloft.files.models import File
from agentloft.groups import access
from agentloft.knowledge import search
from agentloft.knowledge.errors import CollectionNotFound, KnowledgeFileNotFound, no_search_terms
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile
from agentloft.knowledge.terms import query_tokens

if TYPE_CHECKING:
    from agentloft.core.runtime import Runtime

INDEX_JOB = "knowledge.index"
ADMIN_ROLE = "admin"
MAX_TOP_K = 50


@dataclass(frozen=True)
class CollectionSummary:
    id: str
    name: str
    description: str
    file_count: int
    chunk_count: int
    status: str
    created_at: datetime
    updated_at: datetime
    group_ids: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class CollectionFile:
    id: str
    name: str
    status: str
    error: str | None
    chunks: int


@dataclass(frozen=True)
class Hit:
    file_id: str
    file_name: str
    chunk_id: int
    text: str
    score: float
    page: int | None


@dataclass(frozen=True)
class Found:
    items: list[Hit]
    mode: search.Mode


def _summaries() -> Select[KnowledgeCollection, int, int, Any]:
    processing = func.coalesce(func.sum(case((KnowledgeFile.status == "processing", 1), else_=0)), 0)
    return (select(KnowledgeCollection, func.count(KnowledgeFile.file_id),
                   func.coalesce(func.sum(KnowledgeFile.chunks), 0), processing)
            .outerjoin(KnowledgeFile, KnowledgeFile.collection_id == KnowledgeCollection.id)
            .group_by(KnowledgeCollection.id))


def _summary(row: Any) -> CollectionSummary:
    c, files, chunks, processing = row
    return CollectionSummary(id=c.id, name=c.name, description=c.description, file_count=int(files),
                             chunk_count=int(chunks), status="processing" if processing else "ready",
                             created_at=c.created_at, updated_at=c.updated_at)


def _owned(user_id: int, collection_id: str) -> Select[KnowledgeCollection]:
    return select(KnowledgeCollection).where(KnowledgeCollection.id == collection_id,
                                             KnowledgeCollection.user_id == user_id)


async def _owned_or_404(db: AsyncSession, user_id: int, collection_id: str) -> KnowledgeCollection:
    return await one_or_404(db, _owned(user_id, collection_id), CollectionNotFound())


# --- collections -------------------------------------------------------------------------------------


async def _with_groups(db: AsyncSession, summaries: list[CollectionSummary]) -> list[CollectionSummary]:
    groups = await access.groups_of(db=db, kind="collection", ids=[s.id for s in summaries])
    return [replace(s, group_ids=groups[s.id]) for s in summaries]


async def create(*, rt: Runtime, user_id: int, name: str, description: str,
                 group_ids: Sequence[int] = ()) -> CollectionSummary:
    """``group_ids``: who the knowledge tool searches it for (an admin's collection; ``groups.access``)."""
    row = KnowledgeCollection(user_id=user_id, name=name, description=description)
    async with rt.db.session() as db:
        wanted = await access.check_group_ids(db=db, group_ids=group_ids)
        db.add(row)
        await db.flush()
        await access.set_groups(db=db, kind="collection", resource_id=row.id, group_ids=wanted)
    return replace(_summary((row, 0, 0, 0)), group_ids=wanted)


async def list_collections(*, rt: Runtime, user_id: int, offset: int,
                           limit: int) -> tuple[list[CollectionSummary], int]:
    """One page of the user's collections, newest first, and how many there are."""
    async with rt.db.session() as db:
        total = (await db.execute(select(func.count()).select_from(KnowledgeCollection)
                                  .where(KnowledgeCollection.user_id == user_id))).scalar_one()
        stmt = (_summaries().where(KnowledgeCollection.user_id == user_id)
                .order_by(KnowledgeCollection.created_at.desc(), KnowledgeCollection.id.desc())
                .offset(offset).limit(limit))
        return await _with_groups(db, [_summary(r) for r in (await db.execute(stmt)).all()]), total


async def get(*, rt: Runtime, user_id: int, collection_id: str) -> tuple[CollectionSummary, list[CollectionFile]]:
    """The collection and its files, oldest first (the order they were added)."""
    async with rt.db.session() as db:
        row = (await db.execute(_summaries().where(KnowledgeCollection.id == collection_id,
                                                   KnowledgeCollection.user_id == user_id))).first()
        if row is None:
            raise CollectionNotFound()
        files = await db.execute(
            select(KnowledgeFile, File.name).join(File, File.id == KnowledgeFile.file_id)
            .where(KnowledgeFile.collection_id == collection_id)
            .order_by(KnowledgeFile.created_at, KnowledgeFile.file_id))
        (summary,) = await _with_groups(db, [_summary(row)])
        return summary, [CollectionFile(id=f.file_id, name=name, status=f.status, error=f.error,
                                              chunks=f.chunks) for f, name in files.all()]


async def update(*, rt: Runtime, user_id: int, collection_id: str, changes: dict[str, Any]) -> None:
    async with rt.db.session() as db:
        row = await _owned_or_404(db, user_id, collection_id)
        group_ids = changes.pop("group_ids", None)
        if group_ids is not None:
            await access.set_groups(db=db, kind="collection", resource_id=row.id, group_ids=group_ids)
        for key, value in changes.items():
            if value is not None:
                setattr(row, key, value)
        row.updated_at = utcnow()


async def delete_collection(*, rt: Runtime, user_id: int, collection_id: str) -> None:
    """The collection, its file entries and chunks (by cascade); the files themselves stay the user's."""
    async with rt.db.session() as db:
        await db.delete(await _owned_or_404(db, user_id, collection_id))


# --- files -------------------------------------------------------------------------------------------


async def add_file(*, rt: Runtime, user_id: int, collection_id: str, file_id: str) -> CollectionFile:
    """Put one of the user's files in the collection and queue its indexing (see the module docstring)."""
    file = await files_service.get(rt=rt, user_id=user_id, file_id=file_id)
    async with rt.db.session() as db:
        await _owned_or_404(db, user_id, collection_id)
        entry = await db.get(KnowledgeFile, (collection_id, file_id))
        if entry is None:
            entry = KnowledgeFile(collection_id=collection_id, file_id=file_id, status="processing", chunks=0)
            db.add(entry)
            await jobs.enqueue(db, INDEX_JOB, {"collection_id": collection_id, "file_id": file_id})
        elif entry.status == "failed":
            entry.status, entry.error = "processing", None
            await jobs.enqueue(db, INDEX_JOB, {"collection_id": collection_id, "file_id": file_id})
        await db.flush()
        return CollectionFile(id=file_id, name=file.name, status=entry.status, error=entry.error,
                              chunks=entry.chunks)


async def remove_file(*, rt: Runtime, user_id: int, collection_id: str, file_id: str) -> None:
    """Take the file out of the collection with its chunks (by cascade); the file itself stays."""
    async with rt.db.session() as db:
        await _owned_or_404(db, user_id, collection_id)
        stmt = delete(KnowledgeFile).where(KnowledgeFile.collection_id == collection_id,
                                           KnowledgeFile.file_id == file_id)
        if not await rows_matched(db, stmt):
            raise KnowledgeFileNotFound()


# --- search ------------------------------------------------------------------------------------------


async def search_collections(*, rt: Runtime, collection_ids: Sequence[str], q: str, top_k: int,
                             user_id: int | None = None) -> Found:
    """The best chunks of the given collections for ``q``. The caller has checked they may be read;
    ``422 no_search_terms`` when ``q`` holds no letters or digits. ``user_id``: whose search it is (an
    embedded query counts for them)."""
    tokens = query_tokens(q)
    if not tokens:
        raise no_search_terms()
    async with rt.db.session() as db:
        ranked, mode = await search.rank(rt, db, collection_ids=collection_ids, query=q, tokens=tokens,
                                         top_k=min(top_k, MAX_TOP_K), user_id=user_id)
        if not ranked:
            return Found([], mode)
        rows = await db.execute(
            select(KnowledgeChunk.id, KnowledgeChunk.file_id, KnowledgeChunk.page, KnowledgeChunk.text, File.name)
            .join(File, File.id == KnowledgeChunk.file_id)
            .where(KnowledgeChunk.id.in_([r.chunk_id for r in ranked]),
                   KnowledgeChunk.collection_id.in_(list(collection_ids))))
    by_id = {r.id: r for r in rows}
    hits = [Hit(file_id=c.file_id, file_name=c.name, chunk_id=c.id, text=c.text, score=r.score, page=c.page)
            for r in ranked if (c := by_id.get(r.chunk_id)) is not None]
    return Found(hits, mode)


async def search_own(*, rt: Runtime, user_id: int, collection_id: str, q: str, top_k: int) -> Found:
    """Search one of the user's own collections."""
    async with rt.db.session() as db:
        await _owned_or_404(db, user_id, collection_id)
    return await search_collections(rt=rt, collection_ids=[collection_id], q=q, top_k=top_k, user_id=user_id)


# --- collections agents search -----------------------------------------------------------------------


async def admin_collection_ids(*, db: AsyncSession, collection_ids: Sequence[str]) -> set[str]:
    """Those of ``collection_ids`` that exist and belong to an admin: the only ones an agent's knowledge
    tool searches, for everyone who may use the agent (a user's own collection stays theirs alone)."""
    if not collection_ids:
        return set()
    stmt = (select(KnowledgeCollection.id).join(User, User.id == KnowledgeCollection.user_id)
            .where(KnowledgeCollection.id.in_(list(collection_ids)), User.role == ADMIN_ROLE))
    return set((await db.execute(stmt)).scalars())


async def owned_collections(*, db: AsyncSession, user_id: int, collection_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(id, name) of those of ``collection_ids`` that exist and are the user's own, in the given order: what
    a chat's own knowledge tool may search (``chat.knowledge``); any other id is simply left out."""
    if not collection_ids:
        return []
    stmt = select(KnowledgeCollection.id, KnowledgeCollection.name).where(
        KnowledgeCollection.id.in_(list(collection_ids)), KnowledgeCollection.user_id == user_id)
    names = {i: n for i, n in (await db.execute(stmt)).all()}
    return [(i, names[i]) for i in dict.fromkeys(collection_ids) if i in names]
