"""The ``knowledge.index`` job: one file of one collection, cut into chunks and indexed.

It reads the text the files domain kept (``files_service.extracted``), cuts it (``knowledge.chunking``)
and builds each chunk's tokens (``knowledge.terms``) on a worker thread, then replaces the file's chunks
in one transaction: the old ones deleted, the new ones written (the index follows by trigger or generated
column), the file's state set ``ready`` with its chunk count, and, when an embedding model is chosen,
the ``knowledge.embed`` job queued (``knowledge.embedding``). Running it again gives the same result, so a
worker killed half-way leaves nothing half-written, and the job's next run (on any worker, once the lease
runs out) does the whole of it.

A file whose text is still being read (a PDF the ``file.extract`` job has not finished) is looked at again
after ``WAIT_S`` by a new job, without counting an attempt: the extraction job ends every file ``ready``
or ``failed``, so this ends too; should a file stay unread for ``WAIT_LIMIT`` all the same, its entry
fails saying so. A file that could not be read fails with the files domain's reason; an image has no text
and fails saying that. A job that fails for good (``AGENTLOFT_JOB_MAX_ATTEMPTS``) marks the entry failed
with the job's error.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, insert, select, update

from agentloft.core import jobs
from agentloft.core.db import utcnow
from agentloft.files import service as files_service
from agentloft.files.errors import FileNotFound, FileProcessing, FileUnreadable
from agentloft.knowledge import embedding
from agentloft.knowledge.chunking import ExtractedLike, chunk
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile
from agentloft.knowledge.service import INDEX_JOB
from agentloft.knowledge.terms import terms

if TYPE_CHECKING:
    from agentloft.core.jobs import JobRunner
    from agentloft.core.runtime import Runtime

WAIT_S = 3.0
WAIT_LIMIT = timedelta(hours=6)
INSERT_BATCH = 1000
IMAGE_HAS_NO_TEXT = "an image holds no text to index"


def register(runner: JobRunner) -> None:
    runner.register(INDEX_JOB, index_file, failed=index_failed)


def _rows(extracted: ExtractedLike, collection_id: str, file_id: str) -> list[dict[str, Any]]:
    return [{"collection_id": collection_id, "file_id": file_id, "ord": c.ord, "page": c.page, "text": c.text,
             "terms": terms(c.text)} for c in chunk(extracted)]


async def index_file(rt: Runtime, payload: dict[str, Any]) -> None:
    collection_id, file_id = str(payload["collection_id"]), str(payload["file_id"])
    async with rt.db.session() as db:
        found = (await db.execute(
            select(KnowledgeCollection.user_id, KnowledgeFile.updated_at)
            .join(KnowledgeFile, KnowledgeFile.collection_id == KnowledgeCollection.id)
            .where(KnowledgeFile.collection_id == collection_id, KnowledgeFile.file_id == file_id))).first()
    if found is None:  # removed from the collection meanwhile
        return
    owner, added = found
    try:
        extracted = await files_service.extracted(rt=rt, user_id=owner, file_id=file_id)
    except FileProcessing:
        await _wait(rt, payload, added)
        return
    except FileUnreadable as exc:
        await _set_failed(rt, collection_id, file_id, exc.message)
        return
    except FileNotFound:  # the file was deleted, and its entry with it
        return
    if extracted is None:
        await _set_failed(rt, collection_id, file_id, IMAGE_HAS_NO_TEXT)
        return
    rows = await asyncio.to_thread(_rows, extracted, collection_id, file_id)
    await _replace_chunks(rt, collection_id, file_id, rows)


async def _replace_chunks(rt: Runtime, collection_id: str, file_id: str, rows: list[dict[str, Any]]) -> None:
    """The file's chunks replaced in one transaction. Its entry's row is locked first (PostgreSQL; SQLite
    writes one at a time anyway): a job whose lease ran out while it ran can be run twice at once, and on
    PostgreSQL the second run's delete would not see the first's uncommitted chunks, so both would stay.
    ``FOR NO KEY UPDATE`` (``key_share``), the lock the entry's update takes anyway, taken earlier: it
    does not wait for writers of rows that only reference the entry."""
    async with rt.db.session() as db:
        entry = await db.get(KnowledgeFile, (collection_id, file_id), with_for_update={"key_share": True})
        if entry is None:
            return
        await db.execute(delete(KnowledgeChunk).where(KnowledgeChunk.collection_id == collection_id,
                                                      KnowledgeChunk.file_id == file_id))
        for start in range(0, len(rows), INSERT_BATCH):
            await db.execute(insert(KnowledgeChunk), rows[start:start + INSERT_BATCH])
        entry.status, entry.error, entry.chunks = "ready", None, len(rows)
        entry.updated_at = utcnow()  # even when nothing else changed: search caches see new chunks by it
        await embedding.after_indexed(db, collection_id=collection_id, file_id=file_id)  # vectors, if a model


async def _wait(rt: Runtime, payload: dict[str, Any], added: Any) -> None:
    if utcnow() - added > WAIT_LIMIT:
        await _set_failed(rt, str(payload["collection_id"]), str(payload["file_id"]),
                          f"the file's text was still not read after {WAIT_LIMIT.total_seconds() / 3600:g} hours")
        return
    async with rt.db.session() as db:
        await jobs.enqueue(db, INDEX_JOB, payload, delay_seconds=WAIT_S)


async def _set_failed(rt: Runtime, collection_id: str, file_id: str, reason: str) -> None:
    async with rt.db.session() as db:
        await db.execute(update(KnowledgeFile).where(
            KnowledgeFile.collection_id == collection_id, KnowledgeFile.file_id == file_id,
        ).values(status="failed", error=reason, chunks=0))
        await db.execute(delete(KnowledgeChunk).where(KnowledgeChunk.collection_id == collection_id,
                                                      KnowledgeChunk.file_id == file_id))


async def index_failed(rt: Runtime, payload: dict[str, Any], reason: str) -> None:
    await _set_failed(rt, str(payload["collection_id"]), str(payload["file_id"]), reason)
