"""Ranked retrieval over collections' chunks: lexical on each database, and the seam where a vector
ranking is fused in.

Lexical is a ranked OR of the query's tokens (``knowledge.terms``), so a chunk that holds the rarer words
of a question comes first even when it lacks some of them:

- **SQLite**: FTS5 over ``knowledge_chunks.terms`` (migration 0022), ordered by ``bm25``, whose inverse
  document frequency is the whole index's (every collection's), a fair stand-in for one collection's.
- **PostgreSQL**: the GIN index on ``terms_vector`` finds the chunks that hold any token; each token's
  ``ts_rank`` (which counts occurrences, normalised by length, but knows nothing of how rare a token is)
  is weighted by BM25's inverse document frequency, counted over the matching chunks of the asked
  collections in the same statement.

Both are always limited to the collection ids the caller asked for; the caller has checked the user may
read them (``knowledge.service``, the knowledge tool).

Hybrid: ``vector_ranking`` is where an embedding model's ranking comes from (``knowledge.embedding``;
``None`` while no embedding model is chosen, or when it failed); when there is one, both rankings are
fused by reciprocal rank fusion (``knowledge.fusion``, k = 60) and the answer's ``mode`` is ``hybrid``,
else ``lexical``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.knowledge import embedding
from agentloft.knowledge.fusion import Ranked, fuse

if TYPE_CHECKING:
    from agentloft.core.runtime import Runtime

# How many of each ranking a fusion looks at, per result asked for.
FUSION_DEPTH = 4
Mode = Literal["lexical", "hybrid"]


def fts5_or(tokens: Sequence[str]) -> str:
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in tokens)


async def _sqlite_lexical(db: AsyncSession, collection_ids: Sequence[str], tokens: Sequence[str],
                          limit: int) -> list[Ranked]:
    stmt = text(
        "SELECT c.id, bm25(knowledge_chunks_fts) AS score FROM knowledge_chunks_fts "
        "JOIN knowledge_chunks c ON c.id = knowledge_chunks_fts.rowid "
        "WHERE knowledge_chunks_fts MATCH :m AND c.collection_id IN :ids ORDER BY score, c.id LIMIT :k"
    ).bindparams(bindparam("ids", expanding=True))
    rows = await db.execute(stmt, {"m": fts5_or(tokens), "ids": list(collection_ids), "k": limit})
    return [Ranked(r.id, -float(r.score)) for r in rows]


def _pg_lexical_sql(count: int) -> str:
    tsq = "to_tsquery('simple', :t{i})"
    dfs = ", ".join(f"count(*) FILTER (WHERE m.v @@ {tsq.format(i=i)}) AS d{i}" for i in range(count))
    score = " + ".join(
        f"ts_rank(m.v, {tsq.format(i=i)}, 1) * ln(1.0 + (n.n - d.d{i} + 0.5) / (d.d{i} + 0.5))::float8"
        for i in range(count))
    return (
        "WITH m AS MATERIALIZED (SELECT id, terms_vector AS v FROM knowledge_chunks "
        "WHERE collection_id IN :ids AND terms_vector @@ to_tsquery('simple', :q)), "
        f"d AS (SELECT {dfs} FROM m), "
        "n AS (SELECT coalesce(sum(chunks), 0) AS n FROM knowledge_files WHERE collection_id IN :ids) "
        f"SELECT m.id, ({score}) AS score FROM m CROSS JOIN d CROSS JOIN n ORDER BY score DESC, m.id LIMIT :k"
    )


async def _pg_lexical(db: AsyncSession, collection_ids: Sequence[str], tokens: Sequence[str],
                      limit: int) -> list[Ranked]:
    stmt = text(_pg_lexical_sql(len(tokens))).bindparams(bindparam("ids", expanding=True))
    params: dict[str, Any] = {f"t{i}": t for i, t in enumerate(tokens)}
    params.update(q=" | ".join(tokens), ids=list(collection_ids), k=limit)
    return [Ranked(r.id, float(r.score)) for r in await db.execute(stmt, params)]


async def lexical_ranking(db: AsyncSession, *, collection_ids: Sequence[str], tokens: Sequence[str],
                          limit: int) -> list[Ranked]:
    """The best ``limit`` chunks of the collections for the query tokens, best first."""
    if not tokens or not collection_ids:
        return []
    dialect = db.get_bind().dialect.name
    search = _pg_lexical if dialect == "postgresql" else _sqlite_lexical
    return await search(db, collection_ids, tokens, limit)


async def rank(rt: Runtime, db: AsyncSession, *, collection_ids: Sequence[str], query: str,
               tokens: Sequence[str], top_k: int) -> tuple[list[Ranked], Mode]:
    """The best ``top_k`` chunks and how they were found."""
    depth = top_k * FUSION_DEPTH
    vector = await embedding.vector_ranking(rt, db, collection_ids=collection_ids, query=query, limit=depth)
    if vector is None:
        return await lexical_ranking(db, collection_ids=collection_ids, tokens=tokens, limit=top_k), "lexical"
    lexical = await lexical_ranking(db, collection_ids=collection_ids, tokens=tokens, limit=depth)
    return fuse([lexical, vector])[:top_k], "hybrid"
