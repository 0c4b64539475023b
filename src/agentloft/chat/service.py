"""Sessions, messages and approvals: the only place chat queries are written.

Every query on a user's data filters by the user id; another user's session is simply "not found".
Turns themselves run in ``chat.engine``; ``chat.turns`` (``start_chat``, ``rewind``, ``answer``, ``stop``)
starts, resumes and stops them for HTTP callers, in background tasks that outlive the request.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn

import orjson
from sqlalchemy import (
    ColumnElement,
    Select,
    Update,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    literal_column,
    select,
    text,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents.models import Agent
from agentloft.auth.models import User
from agentloft.chat import search
from agentloft.chat.models import (
    AWAITING_APPROVAL,
    COMPLETE,
    IDLE,
    INTERRUPTED,
    RUNNING,
    STREAMING,
    TITLE_AUTO,
    TITLE_GENERATED,
    TITLE_USER,
    AgentMessage,
    AgentSession,
    ChatApproval,
    SessionStatus,
)
from agentloft.core.db import one_or_404, rows_matched, table_of, utcnow
from agentloft.core.errors import Conflict, Invalid, NotFound, TooMany, problem
from agentloft.core.ids import new_id
from agentloft.core.plaintext import markdown_to_plain
from agentloft.core.schemas import PageParams
from agentloft.groups import access
from agentloft.llm.models import ModelConfig

TITLE_LENGTH = 60


# Only the start of a message can reach a title: parse no more of it (it runs as a turn starts).
TITLE_SOURCE_CHARS = 400


def title_from(text: str) -> str:
    """A title from the first words of ``text``, markdown dropped (``**Plan**`` reads ``Plan``)."""
    head = text[:TITLE_SOURCE_CHARS]
    line = markdown_to_plain(head) or " ".join(head.split())
    return line if len(line) <= TITLE_LENGTH else line[: TITLE_LENGTH - 1].rstrip() + "…"


# --- sessions --------------------------------------------------------------------------------------


async def create_session(
    *, db: AsyncSession, user_id: int, agent_id: int | None, kind: str = "agent", title: str = "",
    hidden: bool = False,
) -> AgentSession:
    """A new idle session; ``hidden`` keeps it out of the user's lists for good (an A2A task's session)."""
    row = AgentSession(
        id=new_id("as"), user_id=user_id, agent_id=agent_id, kind=kind, title=title_from(title), status=IDLE,
        hidden=hidden,
    )
    db.add(row)
    await db.flush()
    return row


async def get_session(*, db: AsyncSession, session_id: str, user_id: int) -> AgentSession:
    """The user's own, not deleted session, else 404 (also for other users' sessions)."""
    stmt = select(AgentSession).where(
        AgentSession.id == session_id, AgentSession.user_id == user_id, AgentSession.deleted_at.is_(None)
    )
    return await one_or_404(db, stmt, NotFound("session not found", code="session_not_found"))


async def get_readable_session(*, db: AsyncSession, session_id: str, user_id: int,
                               viewer: access.Viewer) -> AgentSession:
    """``get_session``, and 404 ``agent_not_found`` when the session's agent is limited to groups the caller
    is no longer in (``groups.access``). Decided: a hidden agent's sessions are hidden with it (read, page,
    stream, lists, search), not deleted; joining a group again shows them as they were. A disabled agent's
    sessions stay readable: disabling takes an agent out of service, it does not take it from anyone."""
    row = await get_session(db=db, session_id=session_id, user_id=user_id)
    if row.agent_id is not None and not viewer.sees_all:
        groups = (await access.groups_of(db=db, kind="agent", ids=[row.agent_id]))[row.agent_id]
        if not viewer.may_use(frozenset(groups)):
            raise NotFound("the agent of this session is not available to you", code="agent_not_found")
    return row


async def get_session_by_id(*, db: AsyncSession, session_id: str) -> AgentSession:
    """For the engine, which already knows the owner (it was checked when the turn started)."""
    return await one_or_404(db, select(AgentSession).where(AgentSession.id == session_id),
                            NotFound("session not found", code="session_not_found"))


def _from_source(stmt: Select[Any], source: str | None) -> Select[Any]:
    """Only the sessions whose messages came from ``source`` (``api``: started through the
    OpenAI-compatible API), when given: a message column, so no session table change is needed."""
    if not source:
        return stmt
    came = select(AgentMessage.id).where(AgentMessage.session_id == AgentSession.id, AgentMessage.source == source)
    return stmt.where(came.exists())


async def list_sessions(
    *, db: AsyncSession, user_id: int, viewer: access.Viewer, page: PageParams, kind: str | None = None,
    agent_id: int | None = None, source: str | None = None,
) -> tuple[list[AgentSession], int]:
    """The user's sessions, newest first, without those of agents hidden from them (``get_readable_session``)."""
    base = select(AgentSession).where(AgentSession.user_id == user_id, AgentSession.deleted_at.is_(None),
                                      AgentSession.hidden.is_(False),
                                      access.allowed("agent", AgentSession.agent_id, viewer))
    if kind:
        base = base.where(AgentSession.kind == kind)
    if agent_id is not None:
        base = base.where(AgentSession.agent_id == agent_id)
    base = _from_source(base, source)
    total = int((await db.execute(select(func.count()).select_from(base.subquery()))).scalar_one())
    stmt = base.order_by(AgentSession.updated_at.desc(), AgentSession.id.desc())
    rows = (await db.execute(stmt.offset(page.offset).limit(page.page_size))).scalars()
    return list(rows), total


async def search_sessions(
    *, db: AsyncSession, user_id: int, viewer: access.Viewer, q: str, page: PageParams, kind: str | None = None,
    agent_id: int | None = None, source: str | None = None,
) -> search.Hits:
    """The user's sessions whose title or messages hold every term of ``q``, best first (``chat.search``);
    the same sessions the list shows, narrowed the same way. 422 when ``q`` has no terms."""

    def narrow(stmt: Select[Any]) -> Select[Any]:
        stmt = stmt.where(access.allowed("agent", AgentSession.agent_id, viewer))
        if kind:
            stmt = stmt.where(AgentSession.kind == kind)
        stmt = _from_source(stmt, source)
        return stmt if agent_id is None else stmt.where(AgentSession.agent_id == agent_id)

    hits = await search.search_sessions(db=db, user_id=user_id, q=q, offset=page.offset, limit=page.page_size,
                                        narrow=narrow)
    if hits is None:
        raise Invalid("the search has no terms",
                      fields={"q": problem("no_search_terms", "enter something to search for")})
    return hits


async def rename_session(*, db: AsyncSession, session_id: str, user_id: int, title: str) -> AgentSession:
    """The user's own title: never replaced by a generated one."""
    row = await get_session(db=db, session_id=session_id, user_id=user_id)
    row.title = " ".join(title.split())
    row.title_source = TITLE_USER
    await db.flush()
    return row


async def first_exchange(*, db: AsyncSession, session_id: str) -> tuple[str, str] | None:
    """The first user message and the first complete reply after it, or None while there is none."""
    reply = (await db.execute(
        select(AgentMessage).where(AgentMessage.session_id == session_id, AgentMessage.role == "assistant",
                                   AgentMessage.status == COMPLETE)
        .order_by(AgentMessage.sort_order).limit(1)
    )).scalar_one_or_none()
    if reply is None:
        return None
    question = (await db.execute(
        select(AgentMessage.content).where(AgentMessage.session_id == session_id, AgentMessage.role == "user",
                                           AgentMessage.sort_order < reply.sort_order)
        .order_by(AgentMessage.sort_order.desc()).limit(1)
    )).scalar_one_or_none()
    return (question, reply.content) if question is not None else None


async def set_generated_title(*, db: AsyncSession, session_id: str, title: str | None) -> None:
    """Mark the session named (so it is asked once); replace the first-words title when a title came,
    unless the user renamed it meanwhile."""
    values: dict[str, Any] = {"title_source": TITLE_GENERATED}
    if title:
        values["title"] = title
    await db.execute(update(AgentSession).where(AgentSession.id == session_id, AgentSession.title_source == TITLE_AUTO)
                     .values(**values))


async def delete_session(*, db: AsyncSession, session_id: str, user_id: int) -> None:
    row = await get_session(db=db, session_id=session_id, user_id=user_id)
    row.deleted_at = utcnow()
    await db.flush()


async def claim_session(*, db: AsyncSession, session_id: str, from_status: SessionStatus) -> None:
    """Move the session to ``running`` if it is in ``from_status``; the conditional update is what keeps
    two turns from running on one session at once (409 for the loser)."""
    stmt = (
        update(AgentSession)
        .where(AgentSession.id == session_id, AgentSession.status == from_status)
        .values(status=RUNNING, updated_at=utcnow())
    )
    if await rows_matched(db, stmt) != 1:
        raise _busy(await get_session_by_id(db=db, session_id=session_id))


@dataclass
class NewSession:
    """A session to create together with its first turn (one write transaction instead of two).
    ``history``: the model history the turn continues (None: a new conversation); ``earlier``: the
    conversation before the turn as ``(role, text)`` messages the user sees, saved ahead of the turn's own
    (the OpenAI-compatible API hands a whole conversation in one request: ``openai_api.service``)."""

    user_id: int
    agent_id: int | None
    kind: str
    history: str | None = None
    earlier: list[tuple[str, str]] = field(default_factory=list)


async def begin_turn(
    *,
    db: AsyncSession,
    session_id: str,
    user_id: int,
    agent_id: int | None,
    user_text: str,
    model_id: int | None,
    extra: dict[str, Any] | None,
    create: NewSession | None = None,
    running_limit: int | None = None,
    attachments: list[dict[str, Any]] | None = None,
    knowledge_ids: list[str] | None = None,
) -> Begun:
    """Claim the user's idle session of this chat (``agent_id``; None: the plain LLM chat), or create it
    running, and add the user message plus an empty assistant message; returns the assistant message id,
    the model history and the session's knowledge collections (``knowledge_ids`` replaces them when
    given: ``chat.knowledge``). A session that is not the user's, or belongs to another chat, or is busy, is refused
    with the error that says which. Few statements on purpose: under load every statement inside a write
    transaction is an event-loop round trip while SQLite's write lock is held, and on PostgreSQL a round
    trip to the server. So the claim itself checks ownership, and returns the history and the next
    message position. ``running_limit``: refuse the turn (429) when the user would have more chats than
    this running (``refuse_too_many_running``). The lock and the count this needs ride in the claim and
    in the messages' insert, so a limited turn costs no statement more."""
    now = utcnow()
    history: str | None = None
    first = 0
    kept = knowledge_ids or []
    owner = _owner(db, create.user_id if create is not None else user_id, running_limit)
    if create is not None:
        # Core inserts on the tables, not ``db.add`` + flush nor ORM-enabled inserts: the ORM's unit of
        # work and bulk path cost more CPU than the statements (and the parameters keep one cached SQL).
        await db.execute(insert(table_of(AgentSession)).values(user_id=owner), {
            "id": session_id, "agent_id": create.agent_id, "kind": create.kind,
            "title": title_from(user_text), "status": RUNNING, "created_at": now, "updated_at": now,
            "model_history": create.history, "deleted_at": None, "knowledge_ids": kept})
        history, first = create.history, len(create.earlier)
    else:
        sessions, messages = table_of(AgentSession), table_of(AgentMessage)
        last = select(func.max(messages.c.sort_order)).where(messages.c.session_id == session_id)
        claim = (
            update(sessions)
            .where(sessions.c.id == session_id, sessions.c.status == IDLE, *_owned_by(owner, agent_id))
            .values(status=RUNNING, updated_at=now,
                    title=case((sessions.c.title == "", literal(title_from(user_text), sessions.c.title.type)),
                               else_=sessions.c.title))  # the column's type: it makes the text storable
            .returning(sessions.c.model_history, last.scalar_subquery(), sessions.c.knowledge_ids)
        )
        if knowledge_ids is not None:
            claim = claim.values(knowledge_ids=knowledge_ids)
        claimed = (await db.execute(claim)).first()
        if claimed is None:
            await _refuse_claim(db, session_id, user_id, agent_id)
        history, kept = claimed[0], list(claimed[2] or [])
        first = 0 if claimed[1] is None else claimed[1] + 1
    reply_id = new_id("am")
    common = {"session_id": session_id, "created_at": now, "updated_at": now, "input_tokens": None,
              "output_tokens": None, "error": None, **(extra or {})}
    add_messages = insert(table_of(AgentMessage))
    if running_limit:  # counted after the claim, in the transaction that made it
        add_messages = add_messages.returning(_running(user_id).scalar_subquery())
    before = [{**common, "id": new_id("am"), "role": role, "content": said, "status": "complete",
               "parts": [{"type": "text", "text": said}], "model_id": None, "sort_order": i,
               "history_length": None, "attachments": []}
              for i, (role, said) in enumerate(create.earlier if create is not None else [])]
    added = await db.execute(add_messages, [
        *before,
        {**common, "id": new_id("am"), "role": "user", "content": user_text, "status": "complete",
         "parts": [{"type": "text", "text": user_text}], "model_id": None, "sort_order": first,
         "history_length": None, "attachments": attachments or []},
        {**common, "id": reply_id, "role": "assistant", "content": "", "status": STREAMING, "parts": [],
         "model_id": model_id, "sort_order": first + 1, "history_length": None, "attachments": []},
    ])
    if running_limit:
        _refuse_above(int(added.scalars().first() or 0), running_limit)
    return Begun(reply_id, history, kept)


class Begun(NamedTuple):
    """A turn begun: its empty reply, the model history it continues, the session's collection ids."""

    reply_id: str
    history: str | None
    knowledge_ids: list[str]


@dataclass
class Rewound:
    """A session cut back to one user message, its turn claimed again: what the new run needs."""

    reply_id: str
    prompt: str
    history: str | None
    knowledge_ids: list[str]


async def rewind_turn(
    *, db: AsyncSession, session_id: str, user_id: int, message_id: str | None, text: str | None,
    model_id: int | None, running_limit: int | None = None,
) -> Rewound:
    """Edit-and-resend (``text`` given) or regenerate (``text`` None) from one of the user's messages
    (``message_id`` None: the last one). Everything after that message goes: later messages, their
    approvals, and the model history their turns added; the message's turn is claimed again with a new,
    empty reply. 409 while a reply is written or an approval waits, exactly like sending a message.

    What the removed replies did outside the conversation stays done: documents they wrote, A2A tasks
    they started, requests their tools sent. Only the conversation forgets it. ``running_limit`` as for
    ``begin_turn``."""
    await get_session(db=db, session_id=session_id, user_id=user_id)
    if await is_a2a_session(db=db, session_id=session_id):
        raise Conflict("this conversation belongs to an agent-to-agent task", code="a2a_session")
    message = await _user_message(db, session_id, message_id)
    claim = (
        update(AgentSession)
        .where(AgentSession.id == session_id, AgentSession.status == IDLE,
               AgentSession.user_id == _owner(db, user_id, running_limit))
        .values(status=RUNNING, updated_at=utcnow())
        # read in the claim: a turn that just ended may have changed them
        .returning(AgentSession.model_history, AgentSession.knowledge_ids)
    )
    claimed = (await db.execute(claim)).first()
    if claimed is None:
        raise _busy(await get_session(db=db, session_id=session_id, user_id=user_id))
    await refuse_too_many_running(db=db, user_id=user_id, limit=running_limit)
    history = await _history_before(db, claimed[0], message)
    later = select(AgentMessage.id).where(AgentMessage.session_id == session_id,
                                          AgentMessage.sort_order > message.sort_order)
    await db.execute(delete(ChatApproval).where(ChatApproval.message_id.in_(later)))
    await db.execute(delete(AgentMessage).where(AgentMessage.session_id == session_id,
                                                AgentMessage.sort_order > message.sort_order))
    prompt = message.content if text is None else text
    if text is not None:
        await update_message(db=db, message_id=message.id, content=text, parts=[{"type": "text", "text": text}])
    await db.execute(update(AgentSession).where(AgentSession.id == session_id).values(model_history=history))
    reply = AgentMessage(id=new_id("am"), session_id=session_id, role="assistant", content="", parts=[],
                         status=STREAMING, model_id=model_id, sort_order=message.sort_order + 1)
    db.add(reply)
    await db.flush()
    return Rewound(reply_id=reply.id, prompt=prompt, history=history, knowledge_ids=list(claimed[1] or []))


async def user_message(*, db: AsyncSession, session_id: str, user_id: int, message_id: str | None) -> AgentMessage:
    """One of the user's messages in their session (``message_id`` None: the last one), else 404: what
    a regeneration or an edit starts again from."""
    await get_session(db=db, session_id=session_id, user_id=user_id)
    return await _user_message(db, session_id, message_id)


async def _user_message(db: AsyncSession, session_id: str, message_id: str | None) -> AgentMessage:
    stmt = select(AgentMessage).where(AgentMessage.session_id == session_id, AgentMessage.role == "user")
    if message_id is None:
        stmt = stmt.order_by(AgentMessage.sort_order.desc()).limit(1)
    else:
        stmt = stmt.where(AgentMessage.id == message_id)
    row = (await db.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise NotFound("no message of yours with this id in this session", code="message_not_found")
    return row


async def _history_before(db: AsyncSession, raw: str | None, message: AgentMessage) -> str | None:
    """The stored model history as it was when ``message``'s turn started: as long as the last earlier
    reply left it (each reply records that length when its turn is saved; a turn that saved no history
    records none, and the one before it counts)."""
    if not raw:
        return raw
    items = orjson.loads(raw)
    earlier = (select(AgentMessage.history_length)
               .where(AgentMessage.session_id == message.session_id, AgentMessage.role == "assistant",
                      AgentMessage.sort_order < message.sort_order, AgentMessage.history_length.is_not(None))
               .order_by(AgentMessage.sort_order.desc()).limit(1))
    length = (await db.execute(earlier)).scalar_one_or_none()
    if length is not None:
        return orjson.dumps(items[:length]).decode()
    # No reply before it recorded a length (the first message, or replies from before 0008): its turn
    # starts at the request that carries the (n+1)-th user prompt, n being the user messages before it.
    # Without one, keep the history whole.
    count = select(func.count()).where(AgentMessage.session_id == message.session_id, AgentMessage.role == "user",
                                       AgentMessage.sort_order < message.sort_order)
    wanted = int((await db.execute(count)).scalar_one())
    prompts = [i for i, m in enumerate(items)
               if m.get("kind") == "request" and any(p.get("part_kind") == "user-prompt" for p in m.get("parts", []))]
    return orjson.dumps(items[: prompts[wanted]]).decode() if wanted < len(prompts) else raw


async def is_a2a_session(*, db: AsyncSession, session_id: str) -> bool:
    """Whether the session holds an A2A task's messages (those are never edited nor given titles)."""
    stmt = select(AgentMessage.id).where(AgentMessage.session_id == session_id, AgentMessage.source == "a2a")
    return (await db.execute(stmt.limit(1))).first() is not None


def _owned_by(owner: Any, agent_id: int | None) -> list[ColumnElement[bool]]:
    """The session is the user's (``owner``: the user's id, or ``_owner``'s locking subquery), not
    deleted, and of this chat: an agent's, or the plain LLM chat's (on the Core table's columns: see
    ``_core_update``)."""
    c = table_of(AgentSession).c
    chat = (c.kind == "llm", c.agent_id.is_(None)) if agent_id is None else (c.kind == "agent", c.agent_id == agent_id)
    return [c.user_id == owner, c.deleted_at.is_(None), *chat]


async def _refuse_claim(db: AsyncSession, session_id: str, user_id: int, agent_id: int | None) -> NoReturn:
    """Why a turn could not claim the session: not found (also another user's), another chat's, waiting
    for an approval, or busy."""
    row = await get_session(db=db, session_id=session_id, user_id=user_id)
    kind = "llm" if agent_id is None else "agent"
    if row.kind != kind or row.agent_id != agent_id:
        raise Conflict("this session belongs to another chat", code="session_mismatch")
    raise _busy(row)


def _owner(db: AsyncSession, user_id: int, limit: int | None) -> Any:
    """What a limited turn's claim compares the session's owner with: on PostgreSQL the user's row, locked
    (``FOR NO KEY UPDATE``, in the claim's own statement), so that turns of one user starting at once on
    several workers count their running chats one after the other (the count is a later statement, so it
    sees the turns committed while this one waited). The lock leaves the rows that only refer to the user
    unblocked (their foreign keys take ``KEY SHARE``). SQLite needs none: the claim takes the writers'
    lock, and the count follows it in the same transaction."""
    if not limit or db.get_bind().dialect.name != "postgresql":
        return user_id
    return select(User.id).where(User.id == user_id).with_for_update(key_share=True).scalar_subquery()


def _running(user_id: int) -> Select[Any]:
    """How many of the user's chats are running: those the session list shows (not ``hidden``: an A2A
    task's session is not a chat of the user's), on the partial index of migration 0019, whose condition
    only the literal ``'running'`` matches (a parameter would not)."""
    return select(func.count(AgentSession.id)).where(
        AgentSession.user_id == user_id, AgentSession.status == literal_column(f"'{RUNNING}'"),
        AgentSession.hidden.is_(False))


def _refuse_above(running: int, limit: int) -> None:
    if running > limit:
        raise TooMany(f"{limit} of your chats are writing a reply already; wait for one to finish or stop one",
                      code="too_many_running_chats")


async def refuse_too_many_running(*, db: AsyncSession, user_id: int, limit: int | None) -> None:
    """429 ``too_many_running_chats`` when more than ``limit`` of the user's chats are running, the one
    just claimed included (its transaction then rolls back: no session, message or claim is left). For a
    claim made through ``_owner``. None or 0: no limit."""
    if limit:
        _refuse_above(int((await db.execute(_running(user_id))).scalar_one()), limit)


def _busy(row: AgentSession) -> Conflict:
    if row.status == AWAITING_APPROVAL:
        return Conflict("answer the pending tool approval first", code="approval_pending")
    return Conflict("a reply is still being written in this session", code="session_busy")


async def set_session_state(
    *, db: AsyncSession, session_id: str, status: SessionStatus, history: str | None = None
) -> None:
    values: dict[str, Any] = {"status": status, "updated_at": utcnow()}
    if history is not None:
        values["model_history"] = history
    await db.execute(_core_update(AgentSession, session_id).values(**values))


# --- messages --------------------------------------------------------------------------------------


async def list_messages(*, db: AsyncSession, session_id: str) -> list[AgentMessage]:
    stmt = select(AgentMessage).where(AgentMessage.session_id == session_id).order_by(
        AgentMessage.sort_order, AgentMessage.created_at
    )
    return list((await db.execute(stmt)).scalars())


async def update_message(*, db: AsyncSession, message_id: str, **values: Any) -> None:
    values["updated_at"] = utcnow()
    await db.execute(_core_update(AgentMessage, message_id).values(**values))


def _core_update(model: type[AgentSession] | type[AgentMessage], row_id: str) -> Update:
    """An UPDATE of one row by id on the Core table. Every turn runs these: through the ORM (``update(Model)``)
    each costs ~0.2 ms more CPU (its bulk-update path: synchronising loaded objects, result set-up), and the
    rows they change are never loaded in the session that changes them. Only the table's own columns may
    appear in such a statement: one ORM attribute (``Model.col``) in its WHERE makes it an ORM statement again."""
    table = table_of(model)
    return update(table).where(table.c.id == row_id)


async def get_message(*, db: AsyncSession, message_id: str) -> AgentMessage | None:
    return await db.get(AgentMessage, message_id)


async def last_assistant_message(*, db: AsyncSession, session_id: str) -> AgentMessage | None:
    stmt = (
        select(AgentMessage)
        .where(AgentMessage.session_id == session_id, AgentMessage.role == "assistant")
        .order_by(AgentMessage.sort_order.desc())
        .limit(1)
    )
    return (await db.execute(stmt)).scalar_one_or_none()


# --- approvals -------------------------------------------------------------------------------------


async def add_approvals(
    *, db: AsyncSession, session_id: str, message_id: str, calls: list[dict[str, Any]]
) -> None:
    for call in calls:
        db.add(ChatApproval(session_id=session_id, message_id=message_id, tool_call_id=call["toolCallId"],
                            tool_name=call["toolName"], input=call.get("input"), status="pending",
                            tool_id=call.get("toolId")))
    await db.flush()


async def answer_approval(
    *, db: AsyncSession, session_id: str, tool_call_id: str, approved: bool, reason: str | None,
    answered_by: int | None = None,
) -> str:
    """Record one answer (by ``answered_by``); the tool's name. 404 when the session never asked about this
    call, 409 when it was answered."""
    stmt = (
        update(ChatApproval)
        .where(ChatApproval.session_id == session_id, ChatApproval.tool_call_id == tool_call_id,
               ChatApproval.status == "pending")
        .values(status="approved" if approved else "rejected", reason=reason, answered_at=utcnow(),
                answered_by=answered_by)
        .returning(ChatApproval.tool_name)
    )
    if (tool_name := (await db.execute(stmt)).scalar_one_or_none()) is not None:
        return tool_name
    exists = select(ChatApproval.id).where(
        ChatApproval.session_id == session_id, ChatApproval.tool_call_id == tool_call_id
    )
    if (await db.execute(exists)).first() is None:
        raise NotFound("no tool call with this id waits for approval", code="approval_not_found")
    raise Conflict("this tool call was already answered", code="approval_answered")


async def approvals_of_message(*, db: AsyncSession, message_id: str) -> list[ChatApproval]:
    stmt = select(ChatApproval).where(ChatApproval.message_id == message_id).order_by(ChatApproval.id)
    return list((await db.execute(stmt)).scalars())


async def count_pending_approvals(*, db: AsyncSession) -> int:
    """How many tool calls wait for an answer, all users together: a number for the metrics
    (``approvals_pending``), never a row. Its condition is the literal of ``ix_chat_approvals_pending``,
    which holds only the pending calls, so the count costs the same however many were ever answered."""
    stmt = select(func.count()).select_from(ChatApproval).where(text("status = 'pending'"))
    return int((await db.execute(stmt)).scalar_one())


async def pending_approvals(*, db: AsyncSession, session_id: str) -> list[ChatApproval]:
    stmt = select(ChatApproval).where(ChatApproval.session_id == session_id, ChatApproval.status == "pending")
    return list((await db.execute(stmt.order_by(ChatApproval.id))).scalars())


# --- runs cut off ----------------------------------------------------------------------------------


async def running_session_ids(*, db: AsyncSession) -> list[str]:
    """Sessions the database says a turn is being written in (by some worker, or by one that died)."""
    return list((await db.execute(select(AgentSession.id).where(AgentSession.status == RUNNING))).scalars())


async def interrupt_runs(*, db: AsyncSession, session_ids: list[str], note: str) -> list[str]:
    """Finish turns whose worker is gone: the sessions still running go idle and their reply in progress
    becomes ``interrupted`` with ``note``, keeping the text checkpointed so far. Returns the sessions this
    call finished (another worker sweeping the same ones at once finishes none of them twice)."""
    if not session_ids:
        return []
    claim = (
        update(AgentSession)
        .where(AgentSession.id.in_(session_ids), AgentSession.status == RUNNING)
        .values(status=IDLE, updated_at=utcnow())
        .returning(AgentSession.id)
    )
    finished = list((await db.execute(claim)).scalars())
    if finished:
        await db.execute(
            update(AgentMessage)
            .where(AgentMessage.session_id.in_(finished), AgentMessage.status == STREAMING)
            .values(status=INTERRUPTED, error=note, updated_at=utcnow())
        )
    return finished


async def checkpoint_replies(*, db: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """Save replies' text so far while they stream (rows of ``message_id``, ``content``, ``parts``), so a
    worker that dies loses only the last moments of them. One statement executed for every row; only
    while a reply is still streaming, so a late checkpoint never overwrites a finished reply."""
    messages = table_of(AgentMessage)
    stmt = (
        update(messages)
        .where(messages.c.id == bindparam("message_id"), messages.c.status == STREAMING)
        .values(content=bindparam("content"), parts=bindparam("parts"), updated_at=bindparam("now"))
    )
    now = utcnow()
    await db.execute(stmt, [{**row, "now": now} for row in rows])


async def agent_names(*, db: AsyncSession, agent_ids: list[int | None]) -> dict[int, tuple[str, str]]:
    """Slug and name of the given agents, for session lists (one query, not one per row)."""
    ids = {i for i in agent_ids if i is not None}
    if not ids:
        return {}
    rows = await db.execute(select(Agent.id, Agent.slug, Agent.name).where(Agent.id.in_(ids)))
    return {r.id: (r.slug, r.name) for r in rows}


async def model_names(*, db: AsyncSession, model_ids: list[int | None]) -> dict[int | None, str]:
    """Names of the model configurations that wrote the given replies (one query)."""
    ids = {i for i in model_ids if i is not None}
    if not ids:
        return {}
    rows = await db.execute(select(ModelConfig.id, ModelConfig.name).where(ModelConfig.id.in_(ids)))
    return {r.id: r.name for r in rows}
