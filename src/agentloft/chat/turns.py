"""Starting, resuming and stopping turns on behalf of HTTP callers: the run goes to a background task
(so a closed browser never stops it) and the caller gets the buffer key to subscribe to.

Each step opens its own short database transaction; nothing here holds a connection while a reply
streams, which is what lets many chats stream at once on a small pool.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.audit import service as audit_service
from agentloft.auth.models import User
from agentloft.chat import approvals, attachments, engine, service
from agentloft.chat import knowledge as chat_knowledge
from agentloft.chat.models import IDLE, RUNNING, STOPPED, STREAMING, AgentMessage, AgentSession, ChatApproval
from agentloft.core.errors import Conflict, NotFound
from agentloft.core.ids import new_id
from agentloft.core.runtime import Runtime
from agentloft.files import service as files_service
from agentloft.groups import access, approvers
from agentloft.llm.models import ModelConfig

log = logging.getLogger(__name__)


async def _background(rt: Runtime, turn: engine.PreparedTurn) -> None:
    try:
        await engine.drive(rt, turn)
    except BaseException:  # cancelled at shutdown: drive saved the state already
        log.debug("background run of %s ended by cancellation", turn.session_id)


async def start_chat(rt: Runtime, *, user: User, agent_slug: str | None, message: str,
                     session_id: str | None, file_ids: list[str] | None = None,
                     knowledge_ids: list[str] | None = None) -> str:
    """Start a turn with an agent (or the plain model when ``agent_slug`` is None); returns the key.
    A new session is created in the same transaction as its first turn, so a turn that cannot start
    (no model configured, a file that cannot be attached) leaves no empty session behind.
    ``knowledge_ids``: the user's collections the session searches from now on (``chat.knowledge``;
    None: those it has)."""
    agent, inputs = await engine.chat_inputs(rt, agent_slug=agent_slug, user_id=user.id, user_role=user.role)
    rows = await attachments.check(rt, user_id=user.id, file_ids=file_ids or [])
    kept = [attachments.kept(r) for r in rows]
    attachments.refuse_images_without_vision(inputs.model_row, kept)
    prompt = await attachments.model_input(rt, user_id=user.id, text=message, attached=kept)
    knowledge = await chat_knowledge.check(rt, user_id=user.id, collection_ids=knowledge_ids)
    agent_id, kind = (agent.id, "agent") if agent is not None else (None, "llm")
    create = None  # an existing session: checked to be the user's below, and by the claim to be this chat's
    if session_id is None:
        session_id = new_id("as")
        create = service.NewSession(user_id=user.id, agent_id=agent_id, kind=kind)
    else:
        await _own_session(rt, user=user, session_id=session_id)
    request = engine.TurnRequest(user_id=user.id, user_role=user.role, agent=agent, session_id=session_id,
                                 user_text=message, running_limit=rt.settings.max_running_chats_per_user,
                                 attachments=kept, prompt=prompt, knowledge_ids=knowledge)
    turn = await engine.prepare_turn(rt, request, create=create, inputs=inputs)
    rt.runs.note_owner(session_id, user.id)  # the claim found it the user's, or made it so
    rt.runs.spawn(_background(rt, turn))
    return turn.buffer_key


async def _own_session(rt: Runtime, *, user: User, session_id: str) -> None:
    """404 unless the session is the user's. Checked before its run's lease is taken: a lease held by the
    owner's live run would otherwise answer a stranger 409 ``session_busy``, telling them the session
    exists and is busy, and a stranger's lease, however short, would make the owner's next turn a 409.
    The owner is remembered (``RunRegistry.note_owner``), so a conversation's next turns read nothing
    more for it; a deleted session is still refused by the claim, which checks the owner again."""
    if rt.runs.owner_of(session_id) == user.id:
        return
    async with rt.db.read_session() as db:
        await service.get_session(db=db, session_id=session_id, user_id=user.id)
    rt.runs.note_owner(session_id, user.id)


async def rewind(rt: Runtime, *, user: User, session_id: str, message_id: str | None, text: str | None) -> str:
    """Edit-and-resend or regenerate (``service.rewind_turn``) in the background; returns the buffer key.
    The agent must still be enabled, as for any new message."""
    async with rt.db.read_session() as db:
        row = await service.get_session(db=db, session_id=session_id, user_id=user.id)
        names = await service.agent_names(db=db, agent_ids=[row.agent_id])
    slug = None
    if row.kind == "agent":
        if row.agent_id not in names:
            raise NotFound("the agent of this session no longer exists", code="agent_not_found")
        slug = names[row.agent_id][0]
    agent, inputs = await engine.chat_inputs(rt, agent_slug=slug, user_id=user.id, user_role=user.role)
    prompt = await _resent_input(rt, user=user, model=inputs.model_row, session_id=session_id,
                                 message_id=message_id, text=text)
    turn = await engine.prepare_rewind(rt, user_id=user.id, user_role=user.role, agent=agent,
                                       session_id=session_id, message_id=message_id, new_text=text, inputs=inputs,
                                       running_limit=rt.settings.max_running_chats_per_user, prompt=prompt)
    rt.runs.spawn(_background(rt, turn))
    return turn.buffer_key


async def _resent_input(rt: Runtime, *, user: User, model: ModelConfig, session_id: str, message_id: str | None,
                        text: str | None) -> attachments.Prompt | None:
    """The model input of a message sent again (edited to ``text`` when given) with the files it keeps;
    None when it has none (the engine then sends its text). Read before the turn is claimed, so a file
    that cannot be sent refuses the request with nothing cut."""
    async with rt.db.read_session() as db:
        message = await service.user_message(db=db, session_id=session_id, user_id=user.id, message_id=message_id)
    if not message.attachments:
        return None
    attachments.refuse_images_without_vision(model, message.attachments)
    return await attachments.model_input(rt, user_id=user.id, text=message.content if text is None else text,
                                         attached=message.attachments)


@dataclass(frozen=True)
class Answered:
    """An answer recorded: the buffer key of the resumed run (None while other calls wait), the calls
    still waiting, and whether the requester answered (an approver gets no stream: ``chat.approvals``)."""

    key: str | None
    waiting: list[str]
    by_requester: bool


async def answer(rt: Runtime, *, user: User, session_id: str, tool_call_id: str, approved: bool,
                 reason: str | None, ip: str | None = None) -> Answered:
    """Record an answer by the requester or an approver (``chat.approvals`` says who may), with its
    ``tool.approval`` event, in one transaction; when it was the last one, resume the run as the requester.
    An answer the run could not resume on (its agent deleted, disabled, or hidden from the requester, who
    left its groups) is refused with 404 ``agent_not_found`` before anything is recorded: the call stays
    pending, to be answered once the requester may use the agent again."""
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)
    async with rt.db.session() as db:
        session = await approvals.check_answer(db, user=user, viewer=viewer, session_id=session_id,
                                               tool_call_id=tool_call_id)
        owner_id, by_requester = session.user_id, session.user_id == user.id
        role = user.role if by_requester else await approvals.owner_role(db, owner_id)
        owner = viewer if by_requester else await access.viewer_of(rt.db, user_id=owner_id, role=role)
        await engine.check_session_agent(db, session=session, viewer=owner)
        tool_name = await service.answer_approval(db=db, session_id=session_id, tool_call_id=tool_call_id,
                                                  approved=approved, reason=reason, answered_by=user.id)
        await _record_answer(db, user=user, ip=ip, session=session, tool_call_id=tool_call_id,
                             tool_name=tool_name, approved=approved, reason=reason)
    async with rt.db.session() as db:
        waiting = [a.tool_call_id for a in await service.pending_approvals(db=db, session_id=session_id)]
    if waiting:
        return Answered(None, waiting, by_requester)
    try:
        turn = await engine.prepare_resume(rt, session_id=session_id, user_id=owner_id, user_role=role)
    except Conflict as exc:
        if exc.code == "session_busy":  # a concurrent last answer resumed it first: follow that run
            return Answered(session_id, [], by_requester)
        if exc.code == "call_pending":  # an agent it called still waits: its end resumes the run
            return Answered(None, [], by_requester)
        raise
    rt.runs.spawn(_background(rt, turn))
    return Answered(turn.buffer_key, [], by_requester)


# Why a resume did not start that leaves nothing to do: another resumed it first, it waits for something
# else still, or nothing waits any more.
_NOT_NOW = frozenset({"session_busy", "call_pending", "approval_pending", "nothing_to_resume"})


async def resume(rt: Runtime, *, session_id: str, user_id: int, user_role: str) -> str | None:
    """Resume a paused session in the background once what it waited for is there (the reply of an agent
    it called); its buffer key, None when it is not to resume now (see ``_NOT_NOW``)."""
    try:
        turn = await engine.prepare_resume(rt, session_id=session_id, user_id=user_id, user_role=user_role)
    except Conflict as exc:
        if exc.code in _NOT_NOW:
            log.debug("session %s not resumed: %s", session_id, exc.code)
            return None
        raise
    rt.runs.spawn(_background(rt, turn))
    return turn.buffer_key


async def _record_answer(db: AsyncSession, *, user: User, ip: str | None, session: AgentSession, tool_call_id: str,
                         tool_name: str, approved: bool, reason: str | None) -> None:
    """``tool.approval``: who answered which call (the requester, or an approver: ``requesterId`` says whose
    call it was), approved or rejected, and why."""
    await audit_service.record(
        db=db, type="tool.approval", actor=audit_service.Actor(user.id, user.username, ip), target=f"tool:{tool_name}",
        detail={"tool": tool_name, "sessionId": session.id, "toolCallId": tool_call_id,
                "requesterId": session.user_id, "decision": "approved" if approved else "rejected",
                "reason": reason})


async def stop(rt: Runtime, *, user: User, session_id: str) -> bool:
    """Stop the session's run (saving what it produced), on whichever worker runs it. A run that no
    worker runs any more (its server died) is closed in the database instead."""
    async with rt.db.session() as db:
        row = await service.get_session(db=db, session_id=session_id, user_id=user.id)
        status = row.status
    stopped = await rt.runs.stop_anywhere(session_id)
    if stopped is not None:
        return stopped
    if status != RUNNING:
        return False
    async with rt.db.session() as db:
        reply = await service.last_assistant_message(db=db, session_id=session_id)
        if reply is not None and reply.status == STREAMING:
            await service.update_message(db=db, message_id=reply.id, status=STOPPED)
        await service.set_session_state(db=db, session_id=session_id, status=IDLE)
    await rt.buffers.close(session_id)
    return True


async def delete(rt: Runtime, *, user: User, session_id: str) -> None:
    """Delete the user's session and stop its run, on whichever worker runs it: a deleted chat must not
    go on calling the model and its tools where its owner can neither see nor stop it. Deleted first and
    committed, so no new turn can start on it in between (every claim skips deleted sessions); the run
    then saves what it produced, as for any stop, into the deleted session."""
    async with rt.db.session() as db:
        await service.delete_session(db=db, session_id=session_id, user_id=user.id)
    await rt.runs.stop_anywhere(session_id)


@dataclass(frozen=True)
class SessionRecords:
    """What a session's view shows (``GET /api/agent-sessions/{id}``), read in one transaction: the
    session, its messages and the calls waiting for an answer, with the names and ids the response shows.
    Named fields, not a dict's keys, so the type checker catches a reader that asks for one it lacks."""

    session: AgentSession
    messages: list[AgentMessage]
    pending: list[ChatApproval]
    deciders: dict[str, list[tuple[int, str]]]  # approver groups (id, name) by tool call id (``_deciders``)
    active: bool  # a reply is streaming into the session's buffer now
    names: dict[int, tuple[str, str]]  # the session's agent (``service.agent_names``)
    models: dict[int | None, str]  # model names by id, of the messages' models
    files: set[str]  # which attached files are still the user's (the others show as deleted)
    knowledge: list[tuple[str, str]]  # (id, name) of the collections it searches (``chat.knowledge``)


async def session_detail(rt: Runtime, *, user: User, session_id: str) -> SessionRecords:
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)
    async with rt.db.session() as db:
        row = await service.get_readable_session(db=db, session_id=session_id, user_id=user.id, viewer=viewer)
        messages = await service.list_messages(db=db, session_id=session_id)
        pending = await service.pending_approvals(db=db, session_id=session_id)
        deciders = await _deciders(db, pending)
        names = await service.agent_names(db=db, agent_ids=[row.agent_id])
        models = await service.model_names(db=db, model_ids=[m.model_id for m in messages])
        attached = [a["id"] for m in messages for a in m.attachments]
        files = await files_service.existing_ids(db=db, user_id=user.id, file_ids=attached)
        knowledge = await chat_knowledge.attached(db, user_id=user.id, collection_ids=row.knowledge_ids)
    active = await rt.buffers.is_active(session_id)
    return SessionRecords(session=row, messages=messages, pending=pending, deciders=deciders, active=active,
                          names=names, models=models, files=files, knowledge=knowledge)


async def _deciders(db: AsyncSession, pending: list[ChatApproval]) -> dict[str, list[tuple[int, str]]]:
    """The approver groups (id, name) of each pending call, by tool call id: the requester's chat says
    who is to approve instead of offering buttons (empty: the requester approves)."""
    groups = await approvers.approvers_of(db=db, tool_ids=sorted({a.tool_id for a in pending if a.tool_id}))
    names = await approvers.group_names(db=db, group_ids=[g for ids in groups.values() for g in ids])
    return {a.tool_call_id: [(g, names[g]) for g in groups.get(a.tool_id or "", []) if g in names] for a in pending}
