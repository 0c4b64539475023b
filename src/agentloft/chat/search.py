"""Search across one user's own chat sessions: their titles and the text of their messages.

Matching and indexes are ``agentloft.core.textsearch``'s, the same as the documents search: every term
must occur (folded: NFKC, case) in the session's title or in at least one of its messages; one and two
character terms (Chinese words, "AI") use the gram index, longer ones the trigram index. Messages that
came from A2A (``source = 'a2a'``) are not indexed, and sessions that exist for an A2A task, deleted
sessions and whatever the session list hides (``service.SESSION_LIST_FILTERS``) are left out.

Ranking, on both databases: more terms in the title first, then weighted hits (a term in the title
``TITLE_WEIGHT``, in the messages ``MESSAGE_WEIGHT``), then the most recently active session. The total
is exact. Each hit carries its best message (the one holding the most terms, newest first) for a
snippet; a session found by its title alone has none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    CTE,
    Integer,
    Select,
    String,
    Subquery,
    case,
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
from sqlalchemy.orm import aliased

from agentloft.chat.models import AgentMessage, AgentSession
from agentloft.core import textsearch
from agentloft.core.textsearch import Query, Snippet

TITLES = textsearch.FtsIndex(trigrams="agent_sessions_fts", grams="agent_sessions_grams")
MESSAGES = textsearch.FtsIndex(trigrams="agent_messages_fts", grams="agent_messages_grams")
TITLE_WEIGHT = 8
MESSAGE_WEIGHT = 1
A2A = "a2a"
# (text, folded text) as migration 0007's PostgreSQL indexes have them.
PG_MESSAGE = ("agent_messages.content", "coalesce(agent_messages.search_text, lower(agent_messages.content))")
PG_TITLE = ("agent_sessions.title", "agentloft_fold(agent_sessions.title)")


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


async def _sqlite_best(db: AsyncSession, query: Query, user_id: int, session_ids: list[str]) -> dict[str, str]:
    """The best message of each of the page's sessions (most terms, newest first among equals), found by
    folding their indexed messages here as the index does (``textsearch.fold``): a few hundred short
    texts cost less than looking each message up in the terms' match lists, which for a common
    character hold thousands of rows (building them again took longer than the rest of the search)."""
    if not session_ids:
        return {}
    m = AgentMessage
    rows = await db.execute(
        select(m.session_id, m.id, literal_column("agent_messages.rowid"), m.content)
        .join(AgentSession, AgentSession.id == m.session_id)
        .where(m.session_id.in_(session_ids), m.source != A2A, AgentSession.user_id == user_id)
    )
    best: dict[str, tuple[int, int, str]] = {}
    for sid, mid, rowid, content in rows.all():
        folded = textsearch.fold(content or "")
        held = sum(1 for t in query.terms if t.key in folded)
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


def _visible(stmt: Select[Any], user_id: int, filters: list[Callable[[Select[Any]], Select[Any]]]) -> Select[Any]:
    """The user's own, not deleted, non-A2A sessions that the session list would show."""
    # A session an A2A task made starts with an A2A message (one index lookup per session).
    from_a2a = exists().where(AgentMessage.session_id == AgentSession.id, AgentMessage.sort_order == 0,
                              AgentMessage.source == A2A)
    stmt = stmt.where(AgentSession.user_id == user_id, AgentSession.deleted_at.is_(None),
                      AgentSession.kind != A2A, ~from_a2a)
    for narrow in filters:
        stmt = narrow(stmt)
    return stmt


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
    filters: list[Callable[[Select[Any]], Select[Any]]] | None = None,
) -> Hits | None:
    """One page of the user's sessions matching ``q``, best first, and the total; None when ``q`` has
    no terms. ``narrow`` adds the caller's own conditions (kind, agent); ``filters`` are the session
    list's. One statement: where each term is found, the sessions holding all of them with the total,
    the page, and the page's best messages."""
    query = textsearch.parse_query(q)
    if query.empty:
        return None
    pg = db.get_bind().dialect.name == "postgresql"
    if pg:
        await textsearch.pg_custom_plans(db)
    hits = _pg_hits(query, user_id) if pg else _sqlite_hits(query, user_id)
    agg = _per_session(hits, len(query.terms))
    sessions = select(AgentSession).join(agg, agg.c.sid == AgentSession.id)
    sessions = _visible(sessions if narrow is None else narrow(sessions), user_id, filters or [])
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


async def _with_snippets(
    db: AsyncSession, query: Query, rows: list[tuple[AgentSession, str | None]]
) -> list[SessionHit]:
    ids = [mid for _, mid in rows if mid]
    messages: dict[str, AgentMessage] = {}
    if ids:
        found = await db.execute(select(AgentMessage).where(AgentMessage.id.in_(ids)))
        messages = {m.id: m for m in found.scalars()}
    out: list[SessionHit] = []
    for session, mid in rows:
        message = messages.get(mid) if mid else None
        source = message.content if message is not None else session.title
        out.append(SessionHit(session, message, textsearch.snippet(source, query.terms)))
    return out


__all__ = ["Hits", "SessionHit", "search_sessions"]
