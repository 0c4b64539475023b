"""Search across one user's own chat sessions: their titles and the text of their messages.

Matching and indexes are ``agentloft.core.textsearch``'s, the same as the documents search: every term
must occur (folded: NFKC, case) in the session's title or in at least one of its messages; one and two
character terms (Chinese words, "AI") use the gram index, longer ones the trigram index. Messages that
came from A2A (``source = 'a2a'``) are not indexed, and sessions that exist for an A2A task, deleted
sessions and the sessions the session list hides (``AgentSession.hidden``) are left out.

Ranking, on both databases: more terms in the title first, then weighted hits (a term in the title
``TITLE_WEIGHT``, in the messages ``MESSAGE_WEIGHT``), then the most recently active session. The total
is exact. Each hit carries its best message (the one holding the most terms, newest first) for a
snippet; a session found by its title alone has none.

A search costs what its page shows, not what its sessions hold: on SQLite the best message is picked
among each page session's newest ``BEST_OF`` messages, folding here only short ones within a budget and
asking the index about the rest (``_sqlite_best``; PostgreSQL picks it in SQL from the hits); a snippet
reads only the head of its message, or a piece around a later hit (``_with_snippets``); and the Python
work that remains runs on a worker thread once it is large (``textsearch.off_loop``). Before, 100 chats
of one 99,000-character message made one search fold every message whole, on the event loop: 7.6 s,
during which other users waited (docs/benchmarks.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    CTE,
    Integer,
    Row,
    Select,
    String,
    Subquery,
    TextClause,
    bindparam,
    case,
    cast,
    column,
    distinct,
    exists,
    func,
    literal,
    literal_column,
    select,
    text,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased, load_only

from agentloft.chat.models import AgentMessage, AgentSession
from agentloft.core import textsearch
from agentloft.core.textsearch import Query, Snippet

# The plain columns a search's plan depends on (``textsearch.pg_plan_statistics``).
PG_PLAN_COLUMNS = {"agent_messages": ("user_id", "session_id", "source"), "agent_sessions": ("user_id",)}
TITLES = textsearch.FtsIndex(trigrams="agent_sessions_fts", grams="agent_sessions_grams")
MESSAGES = textsearch.FtsIndex(trigrams="agent_messages_fts", grams="agent_messages_grams")
TITLE_WEIGHT = 8
MESSAGE_WEIGHT = 1
A2A = "a2a"
# (text, folded text) as migration 0007's PostgreSQL indexes have them.
PG_MESSAGE = ("agent_messages.content", "coalesce(agent_messages.search_text, lower(agent_messages.content))")
PG_TITLE = ("agent_sessions.title", "agentloft_fold(agent_sessions.title)")
# SQLite: a page session's best message is picked among its newest BEST_OF messages (by place); those of up to
# FOLD_WHOLE characters are folded here while the session's folded text stays within SESSION_FOLD_CHARS,
# the others are looked up in the index (``_sqlite_best``).
BEST_OF = 200
FOLD_WHOLE = 4_000
SESSION_FOLD_CHARS = 32_000


@dataclass(frozen=True)
class SessionHit:
    session: AgentSession
    message: AgentMessage | None  # the best matching message; None when only the title matched
    snippet: Snippet


@dataclass(frozen=True)
class Hits:
    items: list[SessionHit]
    total: int


# --- where each term is found: one row per (session, term, title or message) ------------------------
#
# Columns: sid (session id), t (term number), in_title (1 for the title); PostgreSQL's also mid (message
# id or NULL) and newness (its place in the session: the two messages of one exchange share a creation
# time), from which the statement picks each page session's best message. SQLite picks them in a second
# statement (``_sqlite_best``).


def _sqlite_rowids(index: textsearch.FtsIndex, query: Query, user_id: int, tag: str) -> CTE:
    """The table rowids of the user's rows that the index finds for ``query``, as a CTE ``r``."""
    m = textsearch.fts_match(index, query, user_id, tag=tag)
    sql = f"SELECT {textsearch.table_rowid_sql(m.rowid)} AS r FROM {m.table} WHERE {m.where}"
    return text(sql).bindparams(**m.params).columns(column("r", Integer)).cte(f"r{tag}")


def _sqlite_hits(query: Query, user_id: int) -> CTE:
    """Each term's matching messages once, as a list of rowids (a common character is in thousands of
    messages), and the sessions that hold the term as the DISTINCT sessions of that list: listing every
    hit with its message id, grouping it twice and scanning it again per page session for the best
    message cost more than the LIKE scan."""
    arms: list[Select[str, int, int]] = []
    msg_rowid = literal_column("agent_messages.rowid")
    for i, term in enumerate(query.terms):
        one = query.only(term)
        found, titled = _sqlite_rowids(MESSAGES, one, user_id, f"{i}m"), _sqlite_rowids(TITLES, one, user_id, f"{i}t")
        arms.append(select(AgentMessage.session_id.label("sid"), literal(i).label("t"), literal(0).label("in_title"))
                    .select_from(found).join(AgentMessage, msg_rowid == found.c.r).distinct())
        arms.append(select(AgentSession.id, literal(i), literal(1))
                    .select_from(titled).join(AgentSession, literal_column("agent_sessions.rowid") == titled.c.r))
    return union_all(*arms).cte("hits")


def _sqlite_looked_at(query: Query, user_id: int, session_ids: list[str]) -> TextClause:
    """The messages ``_sqlite_best`` looks at: the indexed ones among each page session's newest ``BEST_OF``
    (by place in the session, found without reading them; a long text costs only what is read of it), with
    the text of those it folds here (``here``) and, for the others, which terms the index holds them
    under (``h0``, ``h1``, ...): the terms' match lists among the user's rows, built only when such a
    message is met (SQLite builds an uncorrelated IN list once, where it is first needed)."""
    looked_up: list[str] = []
    params: dict[str, Any] = {"u": user_id, "best_of": BEST_OF, "whole": FOLD_WHOLE, "budget": SESSION_FOLD_CHARS}
    index_rowid = textsearch.index_rowid_sql(":u", "f.r")
    for i, term in enumerate(query.terms):
        m = textsearch.fts_match(MESSAGES, query.only(term), user_id, tag=f"b{i}")
        params |= m.params
        looked_up.append(f"CASE WHEN NOT f.here THEN {index_rowid} IN (SELECT {m.rowid} FROM {m.table} "
                         f"WHERE {m.where}) END AS h{i}")
    sql = (
        # The newest BEST_OF by their place in the session, through its (session, place) index; whether a
        # message came from A2A through the source index: ``source`` is stored after the text, and reading
        # it past a long text's overflow pages cost ~0.4 ms a message. (Numbering every message of the
        # page sessions with row_number() cost four times the old statement.)
        "WITH cut AS (SELECT s.id AS sid, (SELECT m.sort_order FROM agent_messages m WHERE m.session_id = s.id "
        "ORDER BY m.sort_order DESC LIMIT 1 OFFSET :best_of - 1) AS lo "
        "FROM agent_sessions s WHERE s.id IN :sids AND s.user_id = :u), "
        "l AS (SELECT m.rowid AS r, m.session_id AS sid, m.id AS mid, length(substr(m.content, 1, :whole + 1)) AS n "
        "FROM cut JOIN agent_messages m ON m.session_id = cut.sid AND m.sort_order >= coalesce(cut.lo, -1) "
        "WHERE NOT EXISTS (SELECT 1 FROM agent_messages a INDEXED BY idx_agent_messages_source "
        f"WHERE a.source = '{A2A}' AND a.rowid = m.rowid)), "
        "f AS (SELECT r, sid, mid, n <= :whole AND sum(CASE WHEN n <= :whole THEN n ELSE 0 END) "
        "OVER (PARTITION BY sid ORDER BY r DESC ROWS UNBOUNDED PRECEDING) <= :budget AS here FROM l) "
        f"SELECT f.sid, f.mid, f.r, CASE WHEN f.here THEN m.content END AS content, {', '.join(looked_up)} "
        "FROM f JOIN agent_messages m ON m.rowid = f.r"
    )
    return text(sql).bindparams(bindparam("sids", session_ids, expanding=True), **params)


async def _sqlite_best(db: AsyncSession, query: Query, user_id: int, session_ids: list[str]) -> dict[str, str]:
    """The best message of each of the page's sessions (most terms, newest first among equals) among its
    newest ``BEST_OF`` messages. Short messages are folded here as the index folds them (``fold``), up to
    ``SESSION_FOLD_CHARS`` characters a session: a few hundred short texts cost less than looking each
    message up in the terms' match lists, which for a common character hold thousands of rows (building
    them again took longer than the rest of the search). Longer messages, and those past that budget, are
    looked up in the index instead (``_sqlite_looked_at``): folding them cost what their length costs
    (100 sessions of one 99,000-character message: seconds on the event loop), a match list costs what the
    user's matches cost."""
    if not session_ids:
        return {}
    rows = (await db.execute(_sqlite_looked_at(query, user_id, session_ids))).all()
    folding = sum(len(row[3]) for row in rows if row[3] is not None)
    return await textsearch.off_loop(folding, lambda: _pick_best(query, rows))


def _pick_best(query: Query, rows: Sequence[Row[Any]]) -> dict[str, str]:
    best: dict[str, tuple[int, int, str]] = {}
    for row in rows:
        sid, mid, rowid, content, *looked_up = tuple(row)
        if content is not None:
            folded = textsearch.fold(content)
            held = sum(1 for t in query.terms if t.key in folded)
        else:
            held = sum(1 for h in looked_up if h)
        if held:
            best[sid] = max(best.get(sid, (0, 0, "")), (held, rowid, mid))
    return {sid: mid for sid, (_, _, mid) in best.items()}


def _pg_hits(query: Query, user_id: int) -> CTE:
    """The messages' owner is their own column (kept by the database, migration 0016), which their gram
    index is keyed by: joining the user's sessions instead listed every user's matches first."""
    m, s = AgentMessage, AgentSession
    owner = literal_column("agent_messages.user_id", Integer)
    arms: list[Select[Any, Any, Any, Any, Any]] = []
    for i, term in enumerate(query.terms):
        one = query.only(term)
        arms.append(
            select(m.session_id.label("sid"), literal(i).label("t"), literal(0).label("in_title"),
                   m.id.label("mid"), m.sort_order.label("newness"))
            .where(owner == user_id, m.source != A2A, *textsearch.pg_match(*PG_MESSAGE, one, f"m{i}"))
        )
        arms.append(
            select(s.id.label("sid"), literal(i), literal(1), literal(None, String), literal(0.0))
            .where(s.user_id == user_id, *textsearch.pg_match(*PG_TITLE, one, f"t{i}"))
        )
    return union_all(*arms).cte("hits")


# --- sessions from hits ------------------------------------------------------------------------------


def _visible(stmt: Select[Any], user_id: int) -> Select[Any]:
    """The user's own, not deleted, non-A2A sessions that the session list would show (not ``hidden``)."""
    # A session an A2A task made starts with an A2A message (one index lookup per session).
    from_a2a = exists().where(AgentMessage.session_id == AgentSession.id, AgentMessage.sort_order == 0,
                              AgentMessage.source == A2A)
    return stmt.where(AgentSession.user_id == user_id, AgentSession.deleted_at.is_(None),
                      AgentSession.hidden.is_(False), AgentSession.kind != A2A, ~from_a2a)


def _per_session(hits: CTE, n_terms: int) -> Subquery:
    """Sessions holding every term: how many in the title, how many in messages."""
    in_title = func.count(distinct(case((hits.c.in_title == 1, hits.c.t))))
    in_messages = func.count(distinct(case((hits.c.in_title == 0, hits.c.t))))
    return (
        select(hits.c.sid, in_title.label("tt"), in_messages.label("mt"))
        .group_by(hits.c.sid)
        .having(func.count(distinct(hits.c.t)) == n_terms)
        .subquery("agg")
    )


def _ranking(in_title: Any, in_messages: Any, updated_at: Any, session_id: Any) -> tuple[Any, ...]:
    """ORDER BY: more terms in the title, more weighted hits, most recently active."""
    weighted = TITLE_WEIGHT * in_title + MESSAGE_WEIGHT * in_messages
    return in_title.desc(), weighted.desc(), updated_at.desc(), session_id.desc()


def _best_messages(hits: CTE, page: CTE) -> Subquery:
    """PostgreSQL's best message of each page session (``sid``, ``mid``): the message holding the most
    terms, newest first among equals. One pass over the hits, keeping the page sessions' through an
    array of their ids: a correlated subquery per page session, or a join with the page (which the
    planner, misjudging both sides' sizes, ran as a loop), scanned every hit once per page session:
    12-24 ms of a common character's 58 ms, against ~4 ms."""
    held = (
        select(hits.c.sid, hits.c.mid, func.count(distinct(hits.c.t)).label("n"),
               func.max(hits.c.newness).label("newest"))
        .where(hits.c.in_title == 0, hits.c.sid == func.any(func.array(select(page.c.id).scalar_subquery())))
        .group_by(hits.c.sid, hits.c.mid)
        .subquery("held")
    )
    return (
        select(held.c.sid, held.c.mid)
        .distinct(held.c.sid)
        .order_by(held.c.sid, held.c.n.desc(), held.c.newest.desc())
        .subquery("best")
    )


async def search_sessions(
    *,
    db: AsyncSession,
    user_id: int,
    q: str,
    offset: int,
    limit: int,
    narrow: Callable[[Select[Any]], Select[Any]] | None = None,
) -> Hits | None:
    """One page of the user's sessions matching ``q``, best first, and the total; None when ``q`` has
    no terms. ``narrow`` adds the caller's own conditions (kind, agent). One statement: where each term
    is found, the sessions holding all of them with the total, the page, and the page's best messages."""
    query = textsearch.parse_query(q)
    if query.empty:
        return None
    pg = db.get_bind().dialect.name == "postgresql"
    if pg:
        await textsearch.pg_plan_statistics(db, PG_PLAN_COLUMNS)
        await textsearch.pg_custom_plans(db)
    hits = _pg_hits(query, user_id) if pg else _sqlite_hits(query, user_id)
    agg = _per_session(hits, len(query.terms))
    sessions = select(AgentSession).join(agg, agg.c.sid == AgentSession.id)
    sessions = _visible(sessions if narrow is None else narrow(sessions), user_id)
    matching = sessions.add_columns(agg.c.tt, agg.c.mt, func.count().over().label("total"))

    inner = _ranking(agg.c.tt, agg.c.mt, AgentSession.updated_at, AgentSession.id)
    page = matching.order_by(*inner).offset(offset).limit(limit).cte("page")
    session = aliased(AgentSession, page)
    if pg:
        best = _best_messages(hits, page)
        stmt = select(session, best.c.mid, page.c.total).outerjoin(best, best.c.sid == page.c.id)
    else:
        stmt = select(session, literal(None, String), page.c.total)
    rows = (await db.execute(stmt.order_by(*_ranking(page.c.tt, page.c.mt, page.c.updated_at, page.c.id)))).all()
    if rows:
        total = int(rows[0].total)
    elif not offset:  # an empty first page: nothing matched
        total = 0
    else:
        total = int((await db.execute(select(func.count()).select_from(matching.subquery()))).scalar_one())
    found: list[tuple[AgentSession, str | None]] = [(r[0], r[1]) for r in rows]
    if not pg:
        picked = await _sqlite_best(db, query, user_id, [s.id for s, _ in found])
        found = [(s, picked.get(s.id)) for s, _ in found]
    return Hits(await _with_snippets(db, query, found), total)


@dataclass(frozen=True)
class _Head:
    """The start of a best message (up to ``SNIPPET_HEAD`` characters), and whether the message goes on."""

    message: AgentMessage  # id, role and session only: its text stays in the database
    text: str
    goes_on: bool


async def _heads(db: AsyncSession, ids: list[str]) -> dict[str, _Head]:
    if not ids:
        return {}
    m = AgentMessage
    head = func.substr(m.content, 1, textsearch.SNIPPET_HEAD + 1)  # one more: says whether it goes on
    found = await db.execute(select(m, head).where(m.id.in_(ids))
                             .options(load_only(m.id, m.role, m.session_id, raiseload=True)))
    return {message.id: _Head(message, start[:textsearch.SNIPPET_HEAD], len(start) > textsearch.SNIPPET_HEAD)
            for message, start in found.all()}


async def _with_snippets(
    db: AsyncSession, query: Query, rows: list[tuple[AgentSession, str | None]]
) -> list[SessionHit]:
    """Each hit with its snippet, from its best message or else its title. Only the head of a message
    leaves the database (``_heads``); one whose head holds no hit gets a piece around the first place
    the database finds a term (``_later_pieces``)."""
    heads = await _heads(db, [mid for _, mid in rows if mid])
    chosen = [(session, heads.get(mid) if mid else None) for session, mid in rows]
    size = sum(len(head.text if head else session.title) for session, head in chosen)
    snippets = await textsearch.off_loop(size, lambda: [
        textsearch.snippet(session.title, query.terms) if head is None
        else textsearch.snippet(head.text, query.terms, cut_after=head.goes_on) for session, head in chosen])
    later = [head.message.id for (_, head), cut in zip(chosen, snippets, strict=True)
             if head is not None and head.goes_on and not cut.highlights]
    pieces = await _later_pieces(db, query, later) if later else {}
    return [SessionHit(session, head.message if head else None,
                       pieces.get(head.message.id, cut) if head else cut)
            for (session, head), cut in zip(chosen, snippets, strict=True)]


_NOWHERE = 2**31 - 1  # a position past any text (an int4 on PostgreSQL): the form was not found


async def _later_pieces(db: AsyncSession, query: Query, ids: list[str]) -> dict[str, Snippet]:
    """Snippets of long messages whose head holds no hit, cut from a piece of ``SNIPPET_PIECE`` characters
    around the first place where the database's ``lower()`` finds one of the terms' ``raw_forms`` (instr
    on SQLite, strpos on PostgreSQL; both count characters, as Python does). A message that holds its
    terms only in another form past its head (full-width text for a term typed in ASCII) keeps the snippet
    of its head, unmarked."""
    m = AgentMessage
    pg = db.get_bind().dialect.name == "postgresql"
    find = func.strpos if pg else func.instr
    lowered = func.lower(m.content)
    places = [func.coalesce(func.nullif(find(lowered, func.lower(bindparam(f"form{i}", form, type_=String))), 0),
                            _NOWHERE)
              for i, form in enumerate(textsearch.raw_forms(query.terms))]
    first = places[0] if len(places) == 1 else (func.least if pg else func.min)(*places)
    at = select(m.id.label("id"), first.label("p")).where(m.id.in_(ids)).cte("at").prefix_with("MATERIALIZED")
    start = cast(case((at.c.p > textsearch.SNIPPET_AROUND, at.c.p - textsearch.SNIPPET_AROUND), else_=1), Integer)
    piece = func.substr(m.content, start, textsearch.SNIPPET_PIECE + 1)  # one more: says whether it goes on
    rows = (await db.execute(select(at.c.id, start, piece).join(m, m.id == at.c.id).where(at.c.p < _NOWHERE))).all()
    size = sum(len(part) for *_, part in rows)
    return await textsearch.off_loop(size, lambda: {
        mid: textsearch.snippet(part[:textsearch.SNIPPET_PIECE], query.terms, cut_before=begin > 1,
                                cut_after=len(part) > textsearch.SNIPPET_PIECE)
        for mid, begin, part in rows})


__all__ = ["Hits", "SessionHit", "search_sessions"]
