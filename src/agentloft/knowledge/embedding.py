"""Knowledge's side of embedding models: which one is chosen, the jobs that embed chunks with it, and the
vector ranking the search fuses with the lexical one (``knowledge.search``).

The model: Admin → Settings' ``embeddingModelId`` (``system.service``), used while it names an enabled
embedding model; otherwise (none chosen, deleted, switched off) retrieval is lexical.

Jobs (``core.jobs``: any worker, survive a restart, retried with backoff):

- ``knowledge.embed`` ``{collection_id, file_id}``: queued in the transaction that writes a file's chunks
  (``after_indexed``), it embeds those of the file's chunks that have no vector of the chosen model yet,
  ``WRITE_BATCH`` at a time, each batch written in its own transaction. So a rerun after a killed worker
  continues where it stopped, and a model that fails (down, refusing) fails the job, which is retried;
  until it succeeds the file is found by text search only. The file's state is the index's (``ready``
  once it is searchable), not the embedding's: a file is never held back from text search by its vectors.
- ``knowledge.reembed`` ``{modelId}``: queued when an admin chooses another model (``system.service``,
  in the same transaction) or edits the chosen one's endpoint or model name (``model_changed``, whose
  vectors are then deleted, being another model's now): it queues a ``knowledge.embed`` for every indexed
  file of every collection.

Decided where the issue is silent — what a search uses while the chunks are being embedded again: only
vectors of the chosen model are ever compared with a query (the vector ranking of a collection is over
its chunks that have one), and the ranking is fused with the lexical one as soon as a model is chosen.
So during a re-embed a chunk without its new vector is still found by its words, and joins the vector
ranking once embedded; search never stops, and never compares vectors of two models. Old vectors are
replaced chunk by chunk, and stay usable if the admin switches back to their model before that.

Searching: the query is embedded with at most ``QUERY_TIMEOUT_S`` of waiting (a person at a search box
or a model waiting for its tool; the jobs wait the full model timeout). An embedding server that fails
makes that search lexical, with the reason logged in the words chat model failures use, never an error;
and for ``DOWN_S`` after a failure searches do not ask it again (a dead server would otherwise cost every
search its timeout).

numpy is imported with ``knowledge.vectors`` here, only when there is a model to use it with.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core import jobs
from agentloft.knowledge.cache import Stamp, cache_of
from agentloft.knowledge.fusion import Ranked
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile, KnowledgeVector
from agentloft.llm import service as llm_service
from agentloft.llm.failures import describe_failure
from agentloft.llm.models import ModelConfig
from agentloft.system import service as system_service
from agentloft.usage import service as usage_service

if TYPE_CHECKING:
    from agentloft.core.jobs import JobRunner
    from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

EMBED_JOB = "knowledge.embed"
REEMBED_JOB = system_service.REEMBED_JOB
WRITE_BATCH = 256
QUERY_TIMEOUT_S = 10.0
DOWN_S = 30.0


def register(runner: JobRunner) -> None:
    runner.register(EMBED_JOB, embed_file)
    runner.register(REEMBED_JOB, reembed_all)


async def current_model(db: AsyncSession) -> ModelConfig | None:
    """The embedding model knowledge uses now (the module's doc), else None."""
    model_id = await system_service.embedding_model_id(db=db)
    if model_id is None:
        return None
    row = await db.get(ModelConfig, model_id)
    return row if row is not None and row.enabled and row.kind == "embedding" else None


async def after_indexed(db: AsyncSession, *, collection_id: str, file_id: str) -> None:
    """Queue the file's embedding in the caller's transaction, when there is a model to embed with."""
    if await current_model(db) is not None:
        await jobs.enqueue(db, EMBED_JOB, {"collection_id": collection_id, "file_id": file_id})


async def model_changed(db: AsyncSession, *, model_id: int) -> None:
    """An embedding model's endpoint or model name changed: its vectors are another model's, so they go,
    and if it is the chosen model everything is embedded again."""
    await db.execute(delete(KnowledgeVector).where(KnowledgeVector.model_id == model_id))
    if await system_service.embedding_model_id(db=db) == model_id:
        await jobs.enqueue(db, REEMBED_JOB, {"modelId": model_id})


# --- jobs ----------------------------------------------------------------------------------------------


async def _missing(rt: Runtime, collection_id: str, file_id: str, model_id: int) -> list[tuple[int, str]]:
    """Up to ``WRITE_BATCH`` of the file's chunks without a vector of the model, in order."""
    has_vector = (select(KnowledgeVector.chunk_id)
                  .where(KnowledgeVector.chunk_id == KnowledgeChunk.id, KnowledgeVector.model_id == model_id))
    stmt = (select(KnowledgeChunk.id, KnowledgeChunk.text)
            .where(KnowledgeChunk.collection_id == collection_id, KnowledgeChunk.file_id == file_id,
                   ~has_vector.exists())
            .order_by(KnowledgeChunk.id).limit(WRITE_BATCH))
    async with rt.db.session() as db:
        return [(r.id, r.text) for r in (await db.execute(stmt)).all()]


async def embed_file(rt: Runtime, payload: dict[str, Any]) -> None:
    """The ``knowledge.embed`` job (the module's doc)."""
    from agentloft.knowledge import vectors  # numpy: only with a model to use it for

    collection_id, file_id = str(payload["collection_id"]), str(payload["file_id"])
    async with rt.db.session() as db:
        model = await current_model(db)
        owner = await db.scalar(select(KnowledgeCollection.user_id).where(KnowledgeCollection.id == collection_id))
    if model is None or owner is None:
        return
    spec = llm_service.spec_of(row=model, box=rt.box)
    while batch := await _missing(rt, collection_id, file_id, model.id):
        raw, tokens = await rt.models.embed_counted(spec, [text for _, text in batch])
        values = vectors.normalised(raw)
        async with rt.db.session() as db:
            chosen = await current_model(db)
            if chosen is None or chosen.id != model.id:
                return  # another model was chosen meanwhile: its own job embeds this file
            # the collection's owner caused it: their files, their collection (``usage.service``)
            await usage_service.record(db=db, user_id=owner, source="knowledge", model=model,
                                 tokens=usage_service.Tokens(input=tokens))
            written = await vectors.store(db, collection_id=collection_id, model_id=model.id,
                                          chunk_ids=[cid for cid, _ in batch], vectors=values)
        if not written:  # every chunk of the batch is gone: the file was re-indexed or removed
            return


async def reembed_all(rt: Runtime, payload: dict[str, Any]) -> None:
    """The ``knowledge.reembed`` job: an embedding job for every indexed file, if the model is still the one."""
    async with rt.db.session() as db:
        model = await current_model(db)
        if model is None or model.id != payload.get("modelId"):
            return
        files = (await db.execute(select(KnowledgeFile.collection_id, KnowledgeFile.file_id)
                                  .where(KnowledgeFile.status == "ready")
                                  .order_by(KnowledgeFile.created_at))).all()
        for collection_id, file_id in files:
            await jobs.enqueue(db, EMBED_JOB, {"collection_id": collection_id, "file_id": file_id})


# --- search --------------------------------------------------------------------------------------------


async def vector_ranking(rt: Runtime, db: AsyncSession, *, stamps: dict[str, Stamp], query: str,
                         limit: int, user_id: int | None = None) -> list[Ranked] | None:
    """The stamped collections' chunks nearest to ``query``, best first; None when there is no model to
    embed it with or the model failed (then the search is lexical; the module's doc). The query's
    embedding is recorded for ``user_id``, the user whose search it is, in ``db``'s transaction (None:
    nobody's)."""
    model = await current_model(db)
    if model is None:
        return None
    from agentloft.knowledge import vectors  # numpy: only with a model to use it for

    cache = cache_of(rt)
    if cache.down_until.get(model.id, 0.0) > time.monotonic():
        return None
    try:
        wait = min(QUERY_TIMEOUT_S, rt.settings.model_timeout_seconds)
        raw, tokens = await rt.models.embed_counted(llm_service.spec_of(row=model, box=rt.box), [query],
                                                    timeout_s=wait)
    except Exception as exc:
        cache.down_until[model.id] = time.monotonic() + DOWN_S
        log.warning("knowledge search is lexical for %.0f s: the embedding model %r failed: %s", DOWN_S,
                    model.name, describe_failure(exc))
        return None
    cache.down_until.pop(model.id, None)
    if user_id is not None:
        await usage_service.record(db=db, user_id=user_id, source="knowledge", model=model,
                             tokens=usage_service.Tokens(input=tokens))
    return await vectors.nearest(cache, db, stamps=stamps, model_id=model.id,
                                 query=vectors.normalised(raw)[0], limit=limit)
