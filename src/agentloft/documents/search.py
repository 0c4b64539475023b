"""Ranked full-text search over one user's documents, for Chinese as well as English.

SQLite: a contentless FTS5 table ``agent_documents_fts`` (title, summary, tags, content; ``trigram``
tokenizer) kept in sync by triggers. Trigrams match any substring of three or more characters, so
Chinese needs no word segmentation and English matches inside words ("migrat" finds "migration").
Each document's index rowid is ``(user_id << 32) + (2**32 - 1 - rowid)``, so one user's entries are one
rowid range and FTS5 reads only that slice of each term's list: a search costs what the user's own
matches cost, not what the whole instance holds. Within the range newer documents come first, as FTS5
walks a list ascending two to three times faster than descending.

Ranking (SQLite): more query terms in the title first, then more weighted column hits (each term
found in the title, tags or summary adds ``RANK_WEIGHTS``, as on PostgreSQL), then newest. It is
computed on the newest ``RANK_WINDOW`` matches; older matches follow, newest first. Under that many
matches the ranking is exact; the total is always exact. FTS5's own bm25 is not used: its IDF walks
each term's match list over every user's documents on every query, which made common words miss the
latency goal (docs/benchmarks.md).

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
    Integer,
    Select,
    and_,
    case,
    column,
    func,
    literal,
    literal_column,
    or_,
    select,
    text,
)
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.documents.models import AgentDocument

MIN_TRIGRAM_TERM = 3
MAX_TERMS = 10
RANK_WINDOW = 500
FTS_TABLE = "agent_documents_fts"
# What a term found in each column adds to the SQLite rank (the PostgreSQL rank uses the same weights).
RANK_WEIGHTS = {"title": 8, "tags": 4, "summary": 2}
ROWID_BITS = 32
ROWID_MASK = (1 << ROWID_BITS) - 1


def fts_rowid_sql(user_id: str = "user_id", rowid: str = "rowid") -> str:
    """The index rowid of a document, as SQL; migration 0004's triggers write the same expression."""
    return f"({user_id} << {ROWID_BITS}) + ({ROWID_MASK} - {rowid})"


def _doc_rowid_sql(fts_rowid: str) -> str:
    """The table rowid behind an index rowid, as SQL (the inverse of ``fts_rowid_sql``)."""
    return f"({ROWID_MASK} - ({fts_rowid} & {ROWID_MASK}))"


def _doc_rowid(fts_rowid: int) -> int:
    return ROWID_MASK - (fts_rowid & ROWID_MASK)
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
#
# The index finds the user's newest RANK_WINDOW matches (the table is joined there only to filter by
# type or short terms); the rank then reads those rows' title, tags and summary. FTS5's own bm25 was
# the first choice but costs too much for common words: its IDF walks each term's match list over
# every user's documents on each query (see docs/benchmarks.md).


def _fts_params(user_id: int, query: Query, type: str | None) -> dict[str, Any]:
    lo = user_id << ROWID_BITS
    params: dict[str, Any] = {"m": fts5_match(query.long_terms), "lo": lo, "hi": lo + ROWID_MASK, "u": user_id}
    params |= {f"s{i}": _pattern(t) for i, t in enumerate(query.short_terms)}
    return params | ({"t": type} if type else {})


_DOC_JOIN = f"JOIN agent_documents d ON d.rowid = {_doc_rowid_sql(FTS_TABLE + '.rowid')}"
_FTS_WHERE = f"{FTS_TABLE} MATCH :m AND {FTS_TABLE}.rowid BETWEEN :lo AND :hi"


def _filters(query: Query, type: str | None) -> tuple[str, str]:
    """(join, conditions) that keep one type and rows holding the short terms; the join also re-checks
    the owner. Empty when neither applies, so the query stays on the index."""
    if not type and not query.short_terms:
        return "", ""
    cond = " AND d.user_id = :u" + (" AND d.type = :t" if type else "")
    for i in range(len(query.short_terms)):
        cond += " AND (" + " OR ".join(
            f"d.{c} LIKE :s{i} ESCAPE '\\'" for c in ("title", "summary", "tags", "content")
        ) + ")"
    return _DOC_JOIN, cond


def _holds(col: str, i: int) -> str:
    """1 if ``col`` of the row ``d`` contains term ``i`` (any ASCII case), else 0."""
    return f"(instr(lower(coalesce(d.{col}, '')), lower(:r{i})) > 0)"


def _rank_sql(n_terms: int) -> tuple[str, str]:
    """(how many terms the title holds, weighted column hits) for the row ``d``."""
    in_title = " + ".join(_holds("title", i) for i in range(n_terms))
    weighted = " + ".join(
        f"{weight} * {_holds(col, i)}" for i in range(n_terms) for col, weight in RANK_WEIGHTS.items()
    )
    return in_title, weighted


def _count_sql(query: Query, type: str | None) -> str:
    join, cond = _filters(query, type)
    return f"SELECT count(*) FROM {FTS_TABLE} {join} WHERE {_FTS_WHERE}{cond}"


async def _fts_ranked(db: AsyncSession, params: dict[str, Any], query: Query, type: str | None, offset: int,
                      limit: int) -> tuple[list[AgentDocument], int | None]:
    """One page of the newest RANK_WINDOW matches, best first: more terms in the title, then more
    weighted column hits (``RANK_WEIGHTS``, each term once per column, as on PostgreSQL), then newest;
    and the total (None when the page is past the window). One statement: the rank reads only the
    short title, tags and summary of the window's rows, only the page's documents leave SQLite, and all
    matches are counted only when the window is full."""
    join, cond = _filters(query, type)
    terms = query.long_terms + query.short_terms
    params = dict(params, lim=limit, off=offset) | {f"r{i}": t for i, t in enumerate(terms)}
    in_title, weighted = _rank_sql(len(terms))
    cols = AgentDocument.__table__.columns
    sql = (
        f"WITH w(r) AS MATERIALIZED (SELECT {FTS_TABLE}.rowid FROM {FTS_TABLE} {join} "
        f"WHERE {_FTS_WHERE}{cond} ORDER BY {FTS_TABLE}.rowid LIMIT {RANK_WINDOW}), n(k) AS (SELECT count(*) FROM w) "
        f"SELECT {', '.join(f'd.{c.name}' for c in cols)}, CASE WHEN (SELECT k FROM n) < {RANK_WINDOW} "
        f"THEN (SELECT k FROM n) ELSE ({_count_sql(query, type)}) END AS fts_total "
        f"FROM w CROSS JOIN agent_documents d ON d.rowid = {_doc_rowid_sql('w.r')} AND d.user_id = :u "
        f"ORDER BY {in_title} DESC, {weighted} DESC, w.r LIMIT :lim OFFSET :off"
    )
    textual = text(sql).columns(*cols, column("fts_total", Integer))
    stmt = select(AgentDocument, textual.selected_columns.fts_total).from_statement(textual)
    rows = (await db.execute(stmt, params)).all()
    return [doc for doc, _ in rows], (int(rows[0][1]) if rows else None)


async def _fts_count(db: AsyncSession, params: dict[str, Any], query: Query, type: str | None) -> int:
    return int((await db.execute(text(_count_sql(query, type)), params)).scalar_one())


async def _fts_older(db: AsyncSession, params: dict[str, Any], query: Query, type: str | None, offset: int,
                     limit: int) -> list[int]:
    """Matches past the ranked window, newest first (``offset`` counts from the newest match)."""
    join, cond = _filters(query, type)
    sql = (
        f"SELECT {FTS_TABLE}.rowid FROM {FTS_TABLE} {join} WHERE {_FTS_WHERE}{cond} "
        f"ORDER BY {FTS_TABLE}.rowid LIMIT :lim OFFSET :off"
    )
    return [int(r) for (r,) in await db.execute(text(sql), {**params, "lim": limit, "off": offset})]


async def _load_in_order(db: AsyncSession, user_id: int, rowids: list[int]) -> list[AgentDocument]:
    if not rowids:
        return []
    rowid = literal_column("agent_documents.rowid")
    stmt = select(AgentDocument, rowid).where(rowid.in_(rowids), AgentDocument.user_id == user_id)
    by_rowid = {r: doc for doc, r in (await db.execute(stmt)).all()}
    return [by_rowid[r] for r in rowids if r in by_rowid]


async def _sqlite(db: AsyncSession, user_id: int, type: str | None, query: Query, offset: int,
                  limit: int) -> Found:
    if not query.long_terms:
        return await _like_only(db, user_id, type, query, offset, limit)
    params = _fts_params(user_id, query, type)
    items, total = await _fts_ranked(db, params, query, type, offset, limit)
    if total is None:  # past the window, or no match at all
        total = await _fts_count(db, params, query, type) if offset else 0
    if len(items) < limit and offset + len(items) < total:
        older = await _fts_older(db, params, query, type, max(offset, RANK_WINDOW), limit - len(items))
        items += await _load_in_order(db, user_id, [_doc_rowid(r) for r in older])
    return Found(items, total)


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
    if db.get_bind().dialect.name == "postgresql":
        return await _postgres(db, user_id, type, q.strip(), query, offset, limit)
    return await _sqlite(db, user_id, type, query, offset, limit)


async def rebuild_index(*, db: AsyncSession) -> None:
    """Re-derive the SQLite index from the table (after restoring a file, or a VACUUM that renumbered
    rows: the index keys on the implicit rowid)."""
    if db.get_bind().dialect.name != "sqlite":
        return
    await db.execute(text(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('delete-all')"))
    await db.execute(text(
        f"INSERT INTO {FTS_TABLE}(rowid, title, summary, tags, content) "
        f"SELECT {fts_rowid_sql()}, title, summary, tags, content FROM agent_documents"
    ))
