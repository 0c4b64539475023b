"""Ranked full-text search over one user's documents, for Chinese as well as English.

The matching and the indexes are ``agentloft.core.textsearch``'s (shared with the chat search): every
term must occur in the title, summary, tags or content, compared after NFKC and case folding; terms of
three characters or more use the trigram index, shorter ones (one or two Chinese characters, "AI") the
gram index. No term falls back to a scan.

SQLite: the contentless FTS5 tables ``agent_documents_fts`` (trigram) and ``agent_documents_grams``, kept
in sync by triggers (migration 0007), keyed by ``(user_id << 32) + (2**32 - 1 - rowid)``, so a search
reads only the user's slice of the index and newest documents first.

Ranking (SQLite): more query terms in the title first, then more weighted column hits (each term found
in the title, tags or summary adds ``RANK_WEIGHTS``, as on PostgreSQL), then newest. It is computed on the
newest ``RANK_WINDOW`` matches; older matches follow, newest first. Under that many matches the ranking
is exact; the total is always exact. FTS5's own bm25 is not used: its IDF walks each term's match list
over every user's documents on every query, which made common words miss the latency goal
(docs/benchmarks.md).

PostgreSQL: GIN indexes over the concatenated text (``PG_SEARCH_EXPR``; the expressions exactly as in
the migration, so the planner uses them): ``pg_trgm`` over its folded form for long terms, the grams
array for short ones, keyed by user and date as well (migration 0011, ``btree_gin``) so that one index
scan yields only the user's matches, and only the newest when the window looks for them. The
rank weighs hits in the title, tags and summary, then adds title similarity; like SQLite it ranks the
newest ``RANK_WINDOW`` matches (ranking every match cost time in proportion to the matches: common
words and single characters missed the latency goal). The exact total of a lone short term with many
matches comes from a count kept with every write (migration 0014, ``_pg_kept_total``): counting them
visits one heap page per match. Any other total is counted in the pass that finds the window.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVarTuple

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    case,
    column,
    func,
    literal,
    literal_column,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from agentloft.core import textsearch
from agentloft.core.db import UTCDateTime
from agentloft.core.textsearch import FtsMatch, Query, parse_query
from agentloft.documents.models import AgentDocument

_Row = TypeVarTuple("_Row")
RANK_WINDOW = 500
# PostgreSQL: how many of the user's newest documents the first look for the window covers, and from how
# many on it looks at all of them (``_postgres``).
PG_FIRST_DEPTH = 4  # times RANK_WINDOW
PG_ALL_DEPTH = 200_000
# A look among the user's newest d documents scans d dates of the gram index (one key each, ~1.4 us); a
# look at every match reads each match's row for its date (~13 us). Beyond this many dates per match,
# reading every match is cheaper (measured at 500,000 documents: a character in 1,156 of the user's
# documents, depth 90,909: 127 ms against 17 ms).
PG_DATES_PER_MATCH = 10
_EPOCH = literal(datetime(1970, 1, 1, tzinfo=UTC), UTCDateTime())
# PostgreSQL keeps the total of a lone short term in ``agent_document_gram_counts`` (migration 0014) once
# it matches this many of the user's documents: counting them costs ~20 ms there (one heap page each,
# ~4 us), against a ~0.3 ms look at the kept row; at most PG_KEPT_COUNTS rows per user.
PG_KEEP_COUNT_FROM = 5_000
PG_KEPT_COUNTS = 200
# Keep identical to migration 0014: the per-user advisory lock every document write takes shared.
GRAM_GUARD = 1_735_289_601
_COUNTS = "agent_document_gram_counts"
_COUNT_KEY = "user_id = :u AND type = :t AND gram = agentloft_fold(:g)"
INDEX = textsearch.FtsIndex(trigrams="agent_documents_fts", grams="agent_documents_grams")
# What a term found in each column adds to the rank (both databases).
RANK_WEIGHTS = {"title": 8, "tags": 4, "summary": 2}
# Keep identical to the index expressions in migration 0007 (``search_text`` is its generated column).
PG_SEARCH_EXPR = (
    "(title || ' ' || coalesce(summary, '') || ' ' || coalesce(tags, '') || ' ' || content)"
)
PG_SEARCH_FOLDED = f"coalesce(search_text, lower({PG_SEARCH_EXPR}))"
INDEXED_COLUMNS = ("title", "summary", "tags", "content")
# The plain columns a search's plan depends on (``textsearch.pg_plan_statistics``).
PG_PLAN_COLUMNS = {"agent_documents": ("user_id", "type", "created_at")}
TYPE_TOKEN = "type:"  # the gram rows also hold "type:<type>" (migration 0007)

__all__ = ["Found", "Query", "parse_query", "rebuild_index", "search_documents"]


@dataclass(frozen=True)
class Found:
    items: list[AgentDocument]
    total: int


# --- SQLite FTS5 -------------------------------------------------------------------------------------
#
# The index finds the user's newest RANK_WINDOW matches (the table is joined there only to filter by
# type); the rank then reads those rows' title, tags and summary.


_DOC = "agent_documents d"


def _filters(match: FtsMatch, type: str | None) -> tuple[str, str]:
    """(join, conditions) that keep one type; the join also re-checks the owner. Empty without a type,
    so the query stays on the index."""
    if not type:
        return "", ""
    join = f"JOIN {_DOC} ON d.rowid = {textsearch.table_rowid_sql(match.rowid)}"
    return join, " AND d.user_id = :u AND d.type = :t"


def _rank_sql(query: Query) -> tuple[str, str, dict[str, str]]:
    """(how many terms the title holds, weighted column hits) for the row ``d``, and their parameters."""
    in_title: list[str] = []
    weighted: list[str] = []
    params: dict[str, str] = {}
    for i, term in enumerate(query.terms):
        for col, weight in RANK_WEIGHTS.items():
            holds, p = textsearch.sqlite_holds(f"d.{col}", term, f"r{i}{col}")
            params |= p
            weighted.append(f"{weight} * {holds}")
            if col == "title":
                in_title.append(holds)
    return " + ".join(in_title), " + ".join(weighted), params


def _count_sql(match: FtsMatch, type: str | None) -> str:
    join, cond = _filters(match, type)
    return f"SELECT count(*) FROM {match.table} {join} WHERE {match.where}{cond}"


async def _fts_ranked(db: AsyncSession, match: FtsMatch, params: dict[str, Any], query: Query,
                      type: str | None, offset: int, limit: int) -> tuple[list[AgentDocument], int | None]:
    """One page of the newest RANK_WINDOW matches, best first: more terms in the title, then more
    weighted column hits (``RANK_WEIGHTS``, each term once per column, as on PostgreSQL), then newest;
    and the total (None when the page is past the window). One statement: the rank reads only the
    short title, tags and summary of the window's rows, only the page's documents leave SQLite, and all
    matches are counted only when the window is full."""
    join, cond = _filters(match, type)
    in_title, weighted, rank_params = _rank_sql(query)
    params = dict(params, lim=limit, off=offset) | rank_params
    cols = AgentDocument.__table__.columns
    sql = (
        f"WITH w(r) AS MATERIALIZED (SELECT {match.rowid} FROM {match.table} {join} "
        f"WHERE {match.where}{cond} ORDER BY {match.rowid} LIMIT {RANK_WINDOW}), n(k) AS (SELECT count(*) FROM w) "
        f"SELECT {', '.join(f'd.{c.name}' for c in cols)}, CASE WHEN (SELECT k FROM n) < {RANK_WINDOW} "
        f"THEN (SELECT k FROM n) ELSE ({_count_sql(match, type)}) END AS fts_total "
        f"FROM w CROSS JOIN {_DOC} ON d.rowid = {textsearch.table_rowid_sql('w.r')} AND d.user_id = :u "
        f"ORDER BY {in_title} DESC, {weighted} DESC, w.r LIMIT :lim OFFSET :off"
    )
    textual = text(sql).columns(*cols, column("fts_total", Integer))
    stmt = select(AgentDocument, textual.selected_columns.fts_total).from_statement(textual)
    rows = (await db.execute(stmt, params)).all()
    return [doc for doc, _ in rows], (int(rows[0][1]) if rows else None)


async def _fts_count(db: AsyncSession, match: FtsMatch, params: dict[str, Any], type: str | None) -> int:
    return int((await db.execute(text(_count_sql(match, type)), params)).scalar_one())


async def _fts_older(db: AsyncSession, match: FtsMatch, params: dict[str, Any], type: str | None, offset: int,
                     limit: int) -> list[int]:
    """Matches past the ranked window, newest first (``offset`` counts from the newest match)."""
    join, cond = _filters(match, type)
    sql = (
        f"SELECT {match.rowid} FROM {match.table} {join} WHERE {match.where}{cond} "
        f"ORDER BY {match.rowid} LIMIT :lim OFFSET :off"
    )
    return [int(r) for (r,) in await db.execute(text(sql), {**params, "lim": limit, "off": offset})]


async def _load_in_order(db: AsyncSession, user_id: int, rowids: list[int]) -> list[AgentDocument]:
    if not rowids:
        return []
    rowid = literal_column("agent_documents.rowid")
    stmt = select(AgentDocument, rowid).where(rowid.in_(rowids), AgentDocument.user_id == user_id)
    by_rowid = {r: doc for doc, r in (await db.execute(stmt)).all()}
    return [by_rowid[r] for r in rowids if r in by_rowid]


def _match(query: Query, user_id: int, type: str | None) -> tuple[FtsMatch, str | None]:
    """The index rows of the matches, and the type still to filter through the table (``_filters``). With
    a short term, the gram rows' ``type:<type>`` token keeps the type inside the index (FTS5 intersects
    the lists; joining the table for each match cost ~25 ms for a common character); with long terms
    only, the table is joined."""
    if type and query.short_terms:
        return textsearch.fts_match(INDEX, query, user_id, gram_tokens=[f"{TYPE_TOKEN}{type}"]), None
    return textsearch.fts_match(INDEX, query, user_id), type


async def _sqlite(db: AsyncSession, user_id: int, type: str | None, query: Query, offset: int,
                  limit: int) -> Found:
    match, type = _match(query, user_id, type)
    params = match.params | {"u": user_id} | ({"t": type} if type else {})
    items, total = await _fts_ranked(db, match, params, query, type, offset, limit)
    if total is None:  # past the window, or no match at all
        total = await _fts_count(db, match, params, type) if offset else 0
    if len(items) < limit and offset + len(items) < total:
        older = await _fts_older(db, match, params, type, max(offset, RANK_WINDOW), limit - len(items))
        items += await _load_in_order(db, user_id, [textsearch.table_rowid(r) for r in older])
    return Found(items, total)


# --- PostgreSQL --------------------------------------------------------------------------------------


def _scoped(stmt: Select[*_Row], user_id: int, type: str | None) -> Select[*_Row]:
    stmt = stmt.where(AgentDocument.user_id == user_id)
    return stmt.where(AgentDocument.type == type) if type else stmt


def _pg_rank(query: Query) -> ColumnElement[float]:
    """Each term found in the title adds 8, in the tags 4, in the summary 2; then title similarity."""
    rank: ColumnElement[float] = literal(0.0)
    for i, term in enumerate(query.terms):
        for col, weight in RANK_WEIGHTS.items():
            holds = textsearch.pg_rank_holds(getattr(AgentDocument, col), term, f"r{i}{col}")
            rank = rank + case((holds, float(weight)), else_=0.0)
    return rank + func.similarity(AgentDocument.title, query.text)


async def _postgres(db: AsyncSession, user_id: int, type: str | None, query: Query, offset: int,
                    limit: int) -> Found:
    """The newest RANK_WINDOW matches ranked (``_pg_rank``, then newest), older ones newest first, as on
    SQLite, and the exact total.

    Without a kept total (``_pg_kept_total``) one statement reads every match once, for the total and the
    window: PostgreSQL 15 visits each matching row's heap page to count it even when the visibility map
    marks the page all-visible (measured: 18,193 pages for a word in 20,718 documents, before and after
    VACUUM), so the date that orders the window comes with the count at no extra page (a count, then a
    look for the window, read the same pages twice: a word in 3,050 documents, 46 -> 15 ms). With a kept
    total (a lone short term in many documents) the newest matches are looked for among the user's newest
    documents only: first as many as ``PG_FIRST_DEPTH`` windows, then more in proportion to what that depth
    held, until the window is full or every match was looked at (``_pg_depth``). PostgreSQL cannot read a
    GIN index in date order, and reading every match's row for its date cost ~230 ms for a two-character
    word held by 16,888 documents."""
    await textsearch.pg_plan_statistics(db, PG_PLAN_COLUMNS)
    await textsearch.pg_custom_plans(db)
    conds = textsearch.pg_match(PG_SEARCH_EXPR, PG_SEARCH_FOLDED, query, "q")
    key = _count_key(user_id, type, query)
    kept = await _pg_kept_total(db, key)
    if kept is None:
        items, _, total = await _pg_ranked(db, user_id, type, query, conds, None, offset, limit)
        if key is not None and total >= PG_KEEP_COUNT_FROM:
            counted = _scoped(select(func.count()).select_from(AgentDocument), user_id, type).where(*conds)
            recounted = await _keep_count(db, counted, key)
            total = total if recounted is None else recounted
    else:
        total = kept
        want = min(total, RANK_WINDOW)
        depth = None if total <= RANK_WINDOW else _pg_depth(PG_FIRST_DEPTH * RANK_WINDOW, total)
        while True:
            items, in_window, _ = await _pg_ranked(db, user_id, type, query, conds, depth, offset, limit)
            if depth is None or in_window >= want:
                break
            depth = _pg_depth(depth * 2 * want // max(in_window, 1), total)  # about twice what should hold it
    if len(items) < limit and offset + len(items) < total:
        d = AgentDocument
        older = _scoped(select(d), user_id, type).where(*conds).order_by(d.created_at.desc().nulls_last(), d.id.desc())
        older = older.offset(max(offset, RANK_WINDOW)).limit(limit - len(items))
        items += list((await db.execute(older)).scalars())
    return Found(items, total)


def _count_key(user_id: int, type: str | None, query: Query) -> dict[str, Any] | None:
    """The key of the query's kept total (migration 0014), or None when it is not the one kind of query
    a kept total answers: a lone short term."""
    if len(query.terms) != 1 or not query.terms[0].short:
        return None
    return {"u": user_id, "t": type or "", "g": query.terms[0].text}


async def _pg_kept_total(db: AsyncSession, key: dict[str, Any] | None) -> int | None:
    """The total kept for the query, or None when none is (then the search counts, and keeps the count
    when it reached ``PG_KEEP_COUNT_FROM``)."""
    if key is None:
        return None
    kept = (await db.execute(text(f"SELECT n FROM {_COUNTS} WHERE {_COUNT_KEY}"), key)).scalar()
    return None if kept is None else int(kept)


async def _keep_count(db: AsyncSession, counted: Select[Any], key: dict[str, Any]) -> int | None:
    """Count again and keep the count, in a transaction of its own that holds the user's ``GRAM_GUARD``
    exclusively, so that no document write of the user can commit between the count and the row: the
    write's trigger, waiting for the guard, then sees the row and updates it. None (nothing kept) when a
    write holds the guard (the lock is tried, never waited for), or the user has ``PG_KEPT_COUNTS`` counts
    already: each one costs every later write of the user a substring test."""
    if not isinstance(db.bind, AsyncEngine):  # a session on one connection: no second transaction
        return None
    bind = db.bind.execution_options(isolation_level="READ COMMITTED")  # a transaction even from a reader
    async with AsyncSession(bind) as own, own.begin():
        await textsearch.pg_custom_plans(own)
        guard = text("SELECT pg_try_advisory_xact_lock(:guard, :u), (SELECT count(*) FROM "
                     f"{_COUNTS} WHERE user_id = :u)")
        locked, kept = (await own.execute(guard, {"guard": GRAM_GUARD, "u": key["u"]})).one()
        if not locked or kept >= PG_KEPT_COUNTS:
            return None
        total = int((await own.execute(counted)).scalar_one())
        await own.execute(text(f"INSERT INTO {_COUNTS} (user_id, type, gram, n) VALUES (:u, :t, "
                               "agentloft_fold(:g), :n) ON CONFLICT DO NOTHING"), key | {"n": total})
        return total


def _pg_depth(depth: int, total: int) -> int | None:
    """How many of the user's newest documents to look among for the window, or None to look at every
    match: when that many dates cost more than reading each of the ``total`` matches, or it nears all."""
    return None if depth > min(PG_ALL_DEPTH, PG_DATES_PER_MATCH * total) else depth


async def _pg_ranked(db: AsyncSession, user_id: int, type: str | None, query: Query,
                     conds: list[ColumnElement[bool]], depth: int | None, offset: int,
                     limit: int) -> tuple[list[AgentDocument], int, int]:
    """One ranked page of the newest RANK_WINDOW matches among the user's ``depth`` newest documents
    (None: all of them), how many matches that window holds, and (``depth`` None) how many there are in
    all, counted in the same pass (``count(*) OVER ()`` before the window's LIMIT); -1 otherwise."""
    d = AgentDocument
    everything = func.count().over() if depth is None else literal(-1)
    matches = _scoped(select(d.id, everything.label("total")), user_id, type).where(*conds)
    if depth is not None:  # from the date of the depth-th newest document on (all, when there are fewer)
        cutoff = _scoped(select(d.created_at), user_id, type).order_by(d.created_at.desc())
        since = func.coalesce(cutoff.offset(depth - 1).limit(1).scalar_subquery(), _EPOCH)
        matches = matches.where(d.created_at >= since)
    # NULLS LAST (created_at is never NULL) is an order no index provides: otherwise, for a term most of
    # the user's documents hold, the planner walks them newest first through the gram function, which
    # it prices per row on every plan, not knowing that the index's exact matches skip it.
    window = (matches.order_by(d.created_at.desc().nulls_last(), d.id.desc()).limit(RANK_WINDOW)
              .cte("w").prefix_with("MATERIALIZED"))
    size = select(func.count()).select_from(window).scalar_subquery()
    ranked = (select(d, size.label("size"), window.c.total).join(window, window.c.id == d.id)
              .order_by(_pg_rank(query).desc(), d.created_at.desc(), d.id.desc()).offset(offset).limit(limit))
    rows = (await db.execute(ranked)).all()
    if rows:
        return [row[0] for row in rows], int(rows[0][1]), int(rows[0][2])
    if not offset:  # the first page of an empty window: nothing matched
        return [], 0, 0
    size, total = (await db.execute(select(func.count(), func.max(window.c.total)).select_from(window))).one()
    return [], int(size), int(total or 0)


# --- entry points ------------------------------------------------------------------------------------


async def search_documents(
    *, db: AsyncSession, user_id: int, type: str | None, q: str, offset: int, limit: int
) -> Found | None:
    """One page of ``user_id``'s documents matching ``q`` (best first) and the total, or None when
    ``q`` holds no terms. A NUL separates terms: FTS5 ends its MATCH string at one and PostgreSQL refuses
    it in text, so a search with one failed."""
    q = q.replace("\x00", " ")
    query = parse_query(q)
    if query.empty:
        return None
    if db.get_bind().dialect.name == "postgresql":
        return await _postgres(db, user_id, type, query, offset, limit)
    return await _sqlite(db, user_id, type, query, offset, limit)


async def rebuild_index(*, db: AsyncSession) -> None:
    """Re-derive the SQLite index from the table (after restoring a file, or a VACUUM that renumbered
    rows: the index keys on the implicit rowid). PostgreSQL's indexes are its own."""
    if db.get_bind().dialect.name != "sqlite":
        return
    await textsearch.rebuild_sqlite_index(
        db, INDEX, rows="FROM agent_documents", rowid=textsearch.index_rowid_sql("user_id", "rowid"),
        columns=INDEXED_COLUMNS, values=INDEXED_COLUMNS, gram_extra=f"' {TYPE_TOKEN}' || type",
    )
