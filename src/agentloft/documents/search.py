"""Ranked full-text search over one user's documents, for Chinese as well as English.

SQLite: a contentless FTS5 table ``agent_documents_fts`` (title, summary, tags, content; ``trigram``
tokenizer) kept in sync by triggers. Trigrams match any substring of three or more characters, so
Chinese needs no word segmentation and English matches inside words ("migrat" finds "migration").
Each document's index rowid is ``(user_id << 32) + rowid``, so one user's entries are one rowid range
and FTS5 reads only that slice of each term's list: a search costs what the user's own matches cost,
not what the whole instance holds.

Ranking is bm25 with the title weighted highest. To keep a search fast when a term matches thousands
of the user's documents, bm25 ranks the newest ``RANK_WINDOW`` matches; older matches follow, newest
first. Under that many matches the ranking is exact; the total is always exact.

Terms shorter than three characters (one or two Chinese characters, "AI", "Go") cannot use trigrams:
next to longer terms they filter the rows those select (``LIKE``); on their own they become a ``LIKE``
scan of the user's documents, titles that contain them first, then newest first.

PostgreSQL: a GIN ``pg_trgm`` index on the concatenated text (``PG_SEARCH_EXPR``, exactly as in the
migration, so the planner uses it) serves ``ILIKE '%term%'`` for every term; the rank weighs hits in
the title, tags and summary, then title similarity.

Terms are whitespace-separated and all must match (AND).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    case,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
    text,
)
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.documents.models import AgentDocument

MIN_TRIGRAM_TERM = 3
MAX_TERMS = 10
RANK_WINDOW = 1000
FTS_TABLE = "agent_documents_fts"
# bm25 weights, in FTS column order: title, summary, tags, content.
BM25 = f"bm25({FTS_TABLE}, 20.0, 2.0, 4.0, 1.0)"
ROWID_BITS = 32
ROWID_MASK = (1 << ROWID_BITS) - 1
# Keep byte-for-byte identical to the index expression in migration 0004.
PG_SEARCH_EXPR = (
    "(title || ' ' || coalesce(summary, '') || ' ' || coalesce(tags, '') || ' ' || content)"
)
_SPLIT = re.compile(r"[\s\u3000]+")


@dataclass(frozen=True)
class Query:
    """A parsed search: terms long enough for the trigram index, and the short ones."""

    long_terms: tuple[str, ...]
    short_terms: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not self.long_terms and not self.short_terms


def parse_query(q: str | None) -> Query:
    seen: list[str] = []
    for term in _SPLIT.split((q or "").strip()):
        term = term.strip('"')
        if term and term.lower() not in (s.lower() for s in seen):
            seen.append(term)
    seen = seen[:MAX_TERMS]
    return Query(
        long_terms=tuple(t for t in seen if len(t) >= MIN_TRIGRAM_TERM),
        short_terms=tuple(t for t in seen if len(t) < MIN_TRIGRAM_TERM),
    )


def fts5_match(terms: tuple[str, ...]) -> str:
    """An FTS5 MATCH string: each term a quoted phrase (quotes doubled), all required."""
    return " AND ".join('"' + t.replace('"', '""') + '"' for t in terms)


@dataclass(frozen=True)
class Found:
    items: list[AgentDocument]
    total: int


# --- plain LIKE (short terms) -----------------------------------------------------------------------


def _contains_any_column(term: str) -> ColumnElement[bool]:
    d = AgentDocument
    return or_(
        d.title.icontains(term, autoescape=True),
        d.summary.icontains(term, autoescape=True),
        d.tags.icontains(term, autoescape=True),
        d.content.icontains(term, autoescape=True),
    )


def _scoped(stmt: Select[Any], user_id: int, type: str | None) -> Select[Any]:
    stmt = stmt.where(AgentDocument.user_id == user_id)
    return stmt.where(AgentDocument.type == type) if type else stmt


async def _run(db: AsyncSession, rows: Select[Any], count: Select[Any], offset: int, limit: int) -> Found:
    total = int((await db.execute(count)).scalar_one())
    items = list((await db.execute(rows.offset(offset).limit(limit))).scalars())
    return Found(items, total)


async def _like_only(db: AsyncSession, user_id: int, type: str | None, query: Query, offset: int,
                     limit: int) -> Found:
    conds = [_contains_any_column(t) for t in query.short_terms]
    title_hit = and_(*(AgentDocument.title.icontains(t, autoescape=True) for t in query.short_terms))
    rows = _scoped(select(AgentDocument), user_id, type).where(*conds).order_by(
        case((title_hit, 0), else_=1), AgentDocument.created_at.desc(), AgentDocument.id.desc()
    )
    count = _scoped(select(func.count()).select_from(AgentDocument), user_id, type).where(*conds)
    return await _run(db, rows, count, offset, limit)


# --- SQLite FTS5 -------------------------------------------------------------------------------------


def _fts_params(user_id: int, query: Query) -> dict[str, Any]:
    lo = user_id << ROWID_BITS
    return {"m": fts5_match(query.long_terms), "lo": lo, "hi": lo + ROWID_MASK, "u": user_id}


_DOC_JOIN = f"JOIN agent_documents d ON d.rowid = ({FTS_TABLE}.rowid & {ROWID_MASK})"
_FTS_WHERE = f"{FTS_TABLE} MATCH :m AND {FTS_TABLE}.rowid BETWEEN :lo AND :hi"


def _type_filter(type: str | None) -> tuple[str, str]:
    """(join, condition) that keep one type; the join also re-checks the owner."""
    return (_DOC_JOIN, " AND d.user_id = :u AND d.type = :t") if type else ("", "")


async def _fts_count(db: AsyncSession, params: dict[str, Any], type: str | None) -> int:
    join, cond = _type_filter(type)
    sql = f"SELECT count(*) FROM {FTS_TABLE} {join} WHERE {_FTS_WHERE}{cond}"
    return int((await db.execute(text(sql), params)).scalar_one())


async def _fts_window(db: AsyncSession, params: dict[str, Any], type: str | None) -> list[tuple[int, float]]:
    """The newest RANK_WINDOW matches as (index rowid, bm25 score), best first."""
    join, cond = _type_filter(type)
    sql = (
        f"SELECT {FTS_TABLE}.rowid, {BM25} FROM {FTS_TABLE} {join} "
        f"WHERE {_FTS_WHERE}{cond} ORDER BY {FTS_TABLE}.rowid DESC LIMIT {RANK_WINDOW}"
    )
    hits = [(int(r), float(score)) for r, score in await db.execute(text(sql), params)]
    return sorted(hits, key=lambda h: (h[1], -h[0]))


async def _fts_older(db: AsyncSession, params: dict[str, Any], type: str | None, offset: int,
                     limit: int) -> list[int]:
    """Matches past the ranked window, newest first (``offset`` counts from the newest match)."""
    join, cond = _type_filter(type)
    sql = (
        f"SELECT {FTS_TABLE}.rowid FROM {FTS_TABLE} {join} WHERE {_FTS_WHERE}{cond} "
        f"ORDER BY {FTS_TABLE}.rowid DESC LIMIT :lim OFFSET :off"
    )
    return [int(r) for (r,) in await db.execute(text(sql), {**params, "lim": limit, "off": offset})]


async def _load_in_order(db: AsyncSession, user_id: int, rowids: list[int]) -> list[AgentDocument]:
    if not rowids:
        return []
    rowid = literal_column("agent_documents.rowid")
    stmt = select(AgentDocument, rowid).where(rowid.in_(rowids), AgentDocument.user_id == user_id)
    by_rowid = {r: doc for doc, r in (await db.execute(stmt)).all()}
    return [by_rowid[r] for r in rowids if r in by_rowid]


async def _fts_with_short_terms(db: AsyncSession, user_id: int, type: str | None, query: Query,
                                params: dict[str, Any], offset: int, limit: int) -> Found:
    """Long terms select through the index, short ones filter those rows; ranked by bm25."""
    join = text(f"{FTS_TABLE} MATCH :m AND {FTS_TABLE}.rowid BETWEEN :lo AND :hi").bindparams(
        m=params["m"], lo=params["lo"], hi=params["hi"]
    )
    on = literal_column("agent_documents.rowid") == literal_column(f"({FTS_TABLE}.rowid & {ROWID_MASK})")
    conds = [_contains_any_column(t) for t in query.short_terms]
    fts = table(FTS_TABLE, column("rowid"))

    def base(stmt: Select[Any]) -> Select[Any]:
        return _scoped(stmt.select_from(fts).join(AgentDocument, on), user_id, type).where(join, *conds)

    rows = base(select(AgentDocument)).order_by(
        literal_column(BM25), AgentDocument.created_at.desc(), AgentDocument.id.desc()
    )
    return await _run(db, rows, base(select(func.count())), offset, limit)


async def _sqlite(db: AsyncSession, user_id: int, type: str | None, query: Query, offset: int,
                  limit: int) -> Found:
    if not query.long_terms:
        return await _like_only(db, user_id, type, query, offset, limit)
    params = {**_fts_params(user_id, query), "t": type}
    if query.short_terms:
        return await _fts_with_short_terms(db, user_id, type, query, params, offset, limit)
    # One pass over the index answers the usual case: under RANK_WINDOW matches the window is all of
    # them, so it also gives the total; only a full window needs the separate count.
    window = await _fts_window(db, params, type)
    total = len(window) if len(window) < RANK_WINDOW else await _fts_count(db, params, type)
    rowids = [r for r, _ in window[offset:offset + limit]]
    if len(rowids) < limit and offset + len(rowids) < total:
        start = max(offset, RANK_WINDOW)
        rowids += await _fts_older(db, params, type, start, limit - len(rowids))
    return Found(await _load_in_order(db, user_id, [r & ROWID_MASK for r in rowids]), total)


# --- PostgreSQL --------------------------------------------------------------------------------------


def _pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def _postgres(db: AsyncSession, user_id: int, type: str | None, raw: str, query: Query, offset: int,
                    limit: int) -> Found:
    terms = query.long_terms + query.short_terms
    expr = literal_column(PG_SEARCH_EXPR)
    d = AgentDocument
    rank: ColumnElement[float] = literal(0.0)
    for t in terms:
        p = _pattern(t)
        rank = (
            rank
            + case((d.title.ilike(p, escape="\\"), 8.0), else_=0.0)
            + case((d.tags.ilike(p, escape="\\"), 4.0), else_=0.0)
            + case((d.summary.ilike(p, escape="\\"), 2.0), else_=0.0)
        )
    rank = rank + func.similarity(d.title, raw)
    conds = [expr.ilike(_pattern(t), escape="\\") for t in terms]
    rows = _scoped(select(d), user_id, type).where(*conds).order_by(rank.desc(), d.created_at.desc(), d.id.desc())
    count = _scoped(select(func.count()).select_from(d), user_id, type).where(*conds)
    return await _run(db, rows, count, offset, limit)


# --- entry points ------------------------------------------------------------------------------------


async def search_documents(
    *, db: AsyncSession, user_id: int, type: str | None, q: str, offset: int, limit: int
) -> Found | None:
    """One page of ``user_id``'s documents matching ``q`` (best first) and the total, or None when
    ``q`` holds no terms."""
    query = parse_query(q)
    if query.empty:
        return None
    if db.bind.dialect.name == "postgresql":
        return await _postgres(db, user_id, type, q.strip(), query, offset, limit)
    return await _sqlite(db, user_id, type, query, offset, limit)


async def rebuild_index(*, db: AsyncSession) -> None:
    """Re-derive the SQLite index from the table (after restoring a file, or a VACUUM that renumbered
    rows: the index keys on the implicit rowid)."""
    if db.bind.dialect.name != "sqlite":
        return
    await db.execute(text(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('delete-all')"))
    await db.execute(text(
        f"INSERT INTO {FTS_TABLE}(rowid, title, summary, tags, content) "
        f"SELECT (user_id << {ROWID_BITS}) + rowid, title, summary, tags, content FROM agent_documents"
    ))
