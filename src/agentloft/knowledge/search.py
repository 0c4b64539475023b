"""Ranked retrieval over collections' chunks: lexical, and the seam where a vector ranking is fused in.

Lexical is a ranked OR of the query's tokens (``knowledge.terms``), so a chunk that holds the rarer words
of a question comes first even when it lacks some of them. It is answered from memory: each collection's
term postings, kept in ``knowledge.cache`` and checked against the database before every search, ranked
by BM25 (``knowledge.postings``; the same on both databases, the asked collections taken as one index).
At 100,000 chunks that is milliseconds where the SQL ranking took hundreds of them on SQLite and seconds
on PostgreSQL (docs/benchmarks.md), because SQL scores every chunk that holds any of the tokens.

The SQL ranking (``lexical_ranking``) answers when a collection's postings do not fit the cache
(``AGENTLOFT_KNOWLEDGE_CACHE_MB``), and is the parity check of the in-memory one:

- **SQLite**: FTS5 over ``knowledge_chunks.terms`` (migration 0022), ordered by ``bm25``, whose inverse
  document frequency is the whole index's (every collection's), a fair stand-in for one collection's.
- **PostgreSQL**: the GIN index on ``terms_vector`` finds the chunks that hold any token; each token's
  ``ts_rank`` (which counts occurrences, normalised by length, but knows nothing of how rare a token is)
  is weighted by BM25's inverse document frequency, counted over the matching chunks of the asked
  collections in the same statement.

Tokens that more than half of all chunks hold (``COMMON_SHARE``; SQLite counts them in the index's
``fts5vocab`` table, PostgreSQL in its column statistics of ``terms_vector``) are left out of the SQL OR,
the rarest of them kept when nothing else is left, and all of them when what was kept finds nothing: they
weigh little in the ranking and made nearly every chunk a candidate to score. The shares are the
instance's, not the asked collections' (reading those would cost what the search saves).

Both are always limited to the collection ids the caller asked for; the caller has checked the user may
read them (``knowledge.service``, the knowledge tool).

Hybrid: ``vector_ranking`` is where an embedding model's ranking comes from (``knowledge.embedding``;
``None`` while no embedding model is chosen, or when it failed); when there is one, both rankings are
fused by reciprocal rank fusion (``knowledge.fusion``, k = 60) and the answer's ``mode`` is ``hybrid``,
else ``lexical``. One freshness read per search serves both rankings (``knowledge.cache.stamps``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import bindparam, text
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.knowledge import embedding
from agentloft.knowledge.cache import KnowledgeCache, Stamp, cache_of
from agentloft.knowledge.cache import stamps as cache_stamps
from agentloft.knowledge.fusion import Ranked, fuse

if TYPE_CHECKING:
    from agentloft.core.runtime import Runtime

# A token more than this share of all chunks hold is left out of a search's ranked OR: its weight in the
# ranking is small (BM25's inverse document frequency below ln 2) and it made nearly every chunk a candidate
# to score (a search over 100,000 chunks 3x slower at the median, bench/knowledge.py).
COMMON_SHARE = 0.5
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


async def _sqlite_shares(db: AsyncSession, tokens: Sequence[str]) -> dict[str, float]:
    total = (await db.execute(text("SELECT coalesce(sum(chunks), 0) FROM knowledge_files"))).scalar_one()
    if not total:
        return {}
    stmt = text("SELECT term, doc FROM knowledge_chunks_vocab WHERE term IN :t").bindparams(
        bindparam("t", expanding=True))
    return {term: doc / total for term, doc in (await db.execute(stmt, {"t": list(tokens)})).all()}


async def _pg_shares(db: AsyncSession, tokens: Sequence[str]) -> dict[str, float]:
    stmt = text("SELECT most_common_elems::text::text[] AS elems, most_common_elem_freqs AS freqs FROM pg_stats "
                "WHERE schemaname = current_schema() AND tablename = 'knowledge_chunks' AND attname = 'terms_vector'")
    row = (await db.execute(stmt)).first()
    if row is None or row.elems is None:  # not analysed yet: every token counts
        return {}
    wanted = set(tokens)
    return {e: float(f) for e, f in zip(row.elems, row.freqs, strict=False) if e in wanted}


def selective(tokens: Sequence[str], shares: dict[str, float]) -> list[str]:
    """The tokens worth an OR: those at most ``COMMON_SHARE`` of the chunks hold; the rarest alone when
    every one is more common than that."""
    keep = [t for t in tokens if shares.get(t, 0.0) <= COMMON_SHARE]
    return keep or [min(tokens, key=lambda t: shares.get(t, 0.0))]


async def lexical_ranking(db: AsyncSession, *, collection_ids: Sequence[str], tokens: Sequence[str],
                          limit: int, prune: bool = True) -> list[Ranked]:
    """The best ``limit`` chunks of the collections for the query tokens, best first. ``prune=False``
    keeps the tokens most chunks hold (the benchmark's baseline)."""
    if not tokens or not collection_ids:
        return []
    postgres = db.get_bind().dialect.name == "postgresql"
    ranked = _pg_lexical if postgres else _sqlite_lexical
    if not prune:
        return await ranked(db, collection_ids, tokens, limit)
    shares = await (_pg_shares if postgres else _sqlite_shares)(db, tokens)
    return await common_left_out(tokens, shares, lambda kept: ranked(db, collection_ids, kept, limit))


async def common_left_out(tokens: Sequence[str], shares: dict[str, float],
                          ranked: Callable[[Sequence[str]], Awaitable[list[Ranked]]]) -> list[Ranked]:
    """``ranked`` of the ``selective`` tokens, or of them all when those find nothing: what was kept is
    in no chunk (a word no file holds, beside words every chunk holds: the usual case in a small
    collection), so the common words are all the question has, and they rank."""
    kept = selective(tokens, shares)
    found = await ranked(kept)
    if found or len(kept) == len(tokens):
        return found
    return await ranked(tokens)


async def cached_lexical(cache: KnowledgeCache, db: AsyncSession, *, stamps: dict[str, Stamp], tokens: Sequence[str],
                         limit: int) -> list[Ranked] | None:
    """The lexical top ``limit`` from the collections' postings kept in memory (``knowledge.postings``);
    None when one of them does not fit the cache (the SQL ranking answers then)."""
    from agentloft.knowledge import postings  # numpy: on the first search, not at start-up

    sets: list[postings.Postings] = []
    for collection_id, stamp in stamps.items():
        kept = await cache.get(("postings", collection_id), stamp.files,
                               lambda c=collection_id: postings.load(db, c))
        if kept is None:
            return None
        sets.append(kept)

    async def ranked(kept: Sequence[str]) -> list[Ranked]:
        return postings.top(sets, kept, limit)

    return await common_left_out(tokens, postings.shares(sets, tokens), ranked)


async def lexical(cache: KnowledgeCache, db: AsyncSession, *, stamps: dict[str, Stamp], tokens: Sequence[str],
                  limit: int) -> list[Ranked]:
    """The lexical top ``limit``: from memory, else in SQL (the module's doc)."""
    found = await cached_lexical(cache, db, stamps=stamps, tokens=tokens, limit=limit)
    if found is not None:
        return found
    return await lexical_ranking(db, collection_ids=list(stamps), tokens=tokens, limit=limit)


async def rank(rt: Runtime, db: AsyncSession, *, collection_ids: Sequence[str], query: str,
               tokens: Sequence[str], top_k: int, user_id: int | None = None) -> tuple[list[Ranked], Mode]:
    """The best ``top_k`` chunks and how they were found: one freshness read of the collections, then
    both rankings from memory where they fit (``user_id``: whose search, for the usage records)."""
    depth = top_k * FUSION_DEPTH
    stamps = await cache_stamps(db, collection_ids)
    vector = await embedding.vector_ranking(rt, db, stamps=stamps, query=query, limit=depth, user_id=user_id)
    if vector is None:
        return await lexical(cache_of(rt), db, stamps=stamps, tokens=tokens, limit=top_k), "lexical"
    found = await lexical(cache_of(rt), db, stamps=stamps, tokens=tokens, limit=depth)
    return fuse([found, vector])[:top_k], "hybrid"
