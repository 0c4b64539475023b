"""Ranked full-text search over a user's documents, for Chinese as well as English.

SQLite: an FTS5 external-content table ``agent_documents_fts`` (columns title, summary, tags, content;
``trigram`` tokenizer) kept in sync by triggers and ranked by bm25 with the title weighted highest.
Trigrams match any substring of three or more characters, so Chinese needs no word segmentation and
English matches inside words ("migrat" finds "migration"). Terms shorter than three characters (one or
two Chinese characters, "AI", "Go") cannot use a trigram index: they become ``LIKE`` conditions on the
rows the longer terms already selected, or, when every term is short, a ``LIKE`` scan of the user's own
documents (newest first, title hits first). The index keys on the implicit rowid; SQLite's VACUUM keeps
it today, but if it ever renumbers rows, ``rebuild_index`` puts the index right.

PostgreSQL: a GIN ``pg_trgm`` index on the concatenated text (``PG_SEARCH_EXPR``, exactly as written in
the migration so the planner uses it) serves ``ILIKE '%term%'`` for every term; the rank weighs hits in
the title, tags and summary, then title similarity.

Terms are whitespace-separated and all must match (AND).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import ColumnElement, Select, and_, case, column, func, literal, literal_column, or_, table, text
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.documents.models import AgentDocument

MIN_TRIGRAM_TERM = 3
MAX_TERMS = 10
FTS_TABLE = "agent_documents_fts"
# bm25 weights, in FTS column order: title, summary, tags, content.
BM25 = f"bm25({FTS_TABLE}, 20.0, 2.0, 4.0, 1.0)"
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


def _contains_any_column(term: str) -> ColumnElement[bool]:
    d = AgentDocument
    return or_(
        d.title.icontains(term, autoescape=True),
        d.summary.icontains(term, autoescape=True),
        d.tags.icontains(term, autoescape=True),
        d.content.icontains(term, autoescape=True),
    )


def _short_terms_filter(query: Query) -> list[ColumnElement[bool]]:
    return [_contains_any_column(t) for t in query.short_terms]


def _like_only(base: Select, query: Query) -> Select:
    """Every term is short: scan the user's rows; titles that contain the terms come first."""
    title_hit = and_(*(AgentDocument.title.icontains(t, autoescape=True) for t in query.short_terms))
    return base.where(*_short_terms_filter(query)).order_by(
        case((title_hit, 0), else_=1), AgentDocument.created_at.desc(), AgentDocument.id.desc()
    )


def _sqlite(base: Select, query: Query) -> Select:
    if not query.long_terms:
        return _like_only(base, query)
    fts = table(FTS_TABLE, column("rowid"))
    return (
        base.join(fts, literal_column(f"{FTS_TABLE}.rowid") == literal_column("agent_documents.rowid"))
        .where(text(f"{FTS_TABLE} MATCH :fts_match").bindparams(fts_match=fts5_match(query.long_terms)))
        .where(*_short_terms_filter(query))
        .order_by(literal_column(BM25), AgentDocument.created_at.desc(), AgentDocument.id.desc())
    )


def _pattern(term: str) -> str:
    escaped = term.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def _postgres(base: Select, raw: str, query: Query) -> Select:
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
    return base.where(*(expr.ilike(_pattern(t), escape="\\") for t in terms)).order_by(
        rank.desc(), d.created_at.desc(), d.id.desc()
    )


def search_select(base: Select, *, dialect: str, q: str) -> Select | None:
    """Add the search conditions and ranking to ``base`` (already scoped to one user), or None if the
    query has no terms."""
    query = parse_query(q)
    if query.empty:
        return None
    if dialect == "postgresql":
        return _postgres(base, q.strip(), query)
    return _sqlite(base, query)


async def rebuild_index(*, db: AsyncSession) -> None:
    """Re-derive the SQLite FTS index from the table (after a restore, or a VACUUM that renumbered)."""
    if db.bind.dialect.name == "sqlite":
        await db.execute(text(f"INSERT INTO {FTS_TABLE}({FTS_TABLE}) VALUES ('rebuild')"))
