"""Approvals inside a callee: an agent-invoke call whose callee pauses for a tool approval.

The callee's turn ends ``awaiting_approval`` in its hidden session (owned by the calling user); the task
is left ``input_required`` and the caller's agent-invoke call is deferred (``ToolResult.defer``), so the
caller's turn ends ``awaiting_approval`` too, with that call open in its saved model history. Everything
that follows reads the database, so it happens on whichever worker gets the next request, and after a
restart:

1. The calling user answers the callee's approval in the side panel, through the approvals route of the
   callee's session (the same user owns both sessions, so the route's owner check holds; anyone else gets
   404). The callee resumes into the panel's buffer ``a2a_<taskId>`` (``engine._resume_key``).
2. When a callee's turn ends (``turn_ended``, told by the engine after it saved the turn) and its task is
   ``input_required``: a new pause leaves it so; any other ending settles the task (``completed``, or
   ``failed`` when the user rejected one of its calls, or its turn failed) and resumes the caller.
3. The caller's resume asks for the deferred call's result (``resolve``): the callee's reply as the
   agent-invoke tool's own result would have carried it, or a failure naming the rejection and its
   reason, which the caller's model sees as a failed agent-invoke call.

A worker that dies between 2's two steps, or before 2 ran at all, is made up for at start-up
(``catch_up``): callee turns that ended with their task still waiting are settled, and callers whose
tasks all settled are resumed. Resuming is safe to try twice: a second try finds the session busy or no
longer paused (``turns.resume``).

A remote callee whose task asks for input (``input-required``) waits the same way without an engine turn
of its own: ``remote`` leaves the task ``input_required`` with the remote task's ids, the panel asks the
user, and ``answer_remote`` sends the answer as the remote task's next message (as the calling user: 404
for anyone else) and resumes the caller once the remote task ends. A remote callee's session is idle
while it asks, so ``catch_up`` leaves such tasks alone.

A resumed callee's turn runs with the call depth and chain of the call that started it (``resume_scope``:
its own agent-invoke calls are limited as before it paused), but without the tool's time limit: the
user may take any time to answer, and the limit bounds an agent's work, not a person's.

Decided here: a rejected callee call still resumes the callee (its own conversation records the denial,
as in any chat), but the task fails with the reason, whatever the callee answered then; the caller gets
that answer along with the failure.
"""

from __future__ import annotations

import logging
from typing import Any

from pydantic_ai.exceptions import ToolFailed
from sqlalchemy import select, update

from agentloft.a2a import remote, service, tasks
from agentloft.a2a.models import A2ATaskSession
from agentloft.agents.models import Agent
from agentloft.chat import approvals as chat_approvals
from agentloft.chat import service as chat_service
from agentloft.chat import turns
from agentloft.chat.leases import task_lease
from agentloft.chat.models import AWAITING_APPROVAL, COMPLETE, IDLE, STOPPED, AgentMessage, AgentSession, ChatApproval
from agentloft.chat.toolset import model_return
from agentloft.core.db import utcnow
from agentloft.core.errors import Conflict
from agentloft.core.runtime import Runtime
from agentloft.tools.base import ToolResult

log = logging.getLogger(__name__)


def _call_id(row: A2ATaskSession) -> str | None:
    """The caller's tool call the task answers (``tool.caller_from`` put it in the task's context)."""
    value = (row.caller_context or {}).get("toolCallId")
    return str(value) if value else None


async def resume_scope(rt: Runtime, task_id: str) -> tuple[int, dict[str, Any]] | None:
    """The call depth and chain a task's callee first ran with (``run_task``), for its resumed turn: its
    own agent-invoke calls are limited by depth and refused in a cycle exactly as before it paused. A
    task made before the chain was kept gets its caller and callee as the chain: all of it for a call one
    level deep."""
    async with rt.db.read_session() as db:
        row = await db.get(A2ATaskSession, task_id)
    if row is None:
        return None
    ctx = row.caller_context or {}
    chain = ctx.get("chain") or [a for a in (row.caller_agent_id, row.agent_id) if a is not None]
    return int(ctx.get("recursionDepth") or 1), {service.CHAIN_KEY: [int(a) for a in chain]}


# --- the callee's turn ended ---------------------------------------------------------------------------


async def turn_ended(rt: Runtime, session_id: str, key: str, result: Any) -> None:
    """A turn of ``session_id`` was saved into buffer ``key``: if it is a waiting task's callee (its
    buffer is the task's) that did not pause again, settle the task and resume its caller. Any other turn
    costs nothing: no task's buffer, no read."""
    task_id = key.removeprefix("a2a_")
    if task_id == key or getattr(result, "status", None) == AWAITING_APPROVAL:
        return
    async with rt.db.read_session() as db:
        row = await db.get(A2ATaskSession, task_id)
    if row is None or row.session_id != session_id or row.state != tasks.INPUT_REQUIRED:
        return
    if await _settle(rt, row):
        await resume_caller(rt, row)


async def _settle(rt: Runtime, row: A2ATaskSession) -> bool:
    """Set the task's state from its callee's last reply; False when another worker settled it first."""
    async with rt.db.session() as db:
        reply = await chat_service.last_assistant_message(db=db, session_id=row.session_id or "")
        rejected = await _rejected(db, reply)
        status = reply.status if reply is not None else None
        state = (tasks.COMPLETED if status == COMPLETE and not rejected
                 else tasks.CANCELED if status == STOPPED else tasks.FAILED)
        claim = (update(A2ATaskSession)
                 .where(A2ATaskSession.id == row.id, A2ATaskSession.state == tasks.INPUT_REQUIRED)
                 .values(state=state, updated_at=utcnow()).returning(A2ATaskSession.id))
        return (await db.execute(claim)).scalar_one_or_none() is not None


async def _rejected(db: Any, reply: AgentMessage | None) -> list[ChatApproval]:
    if reply is None:
        return []
    return [a for a in await chat_service.approvals_of_message(db=db, message_id=reply.id) if a.status == "rejected"]


async def resume_caller(rt: Runtime, row: A2ATaskSession) -> str | None:
    """Resume the caller's session, as its user (the task's), if nothing else holds it back."""
    if row.caller_session_id is None or _call_id(row) is None:
        return None
    async with rt.db.read_session() as db:
        role = await chat_approvals.owner_role(db, row.user_id)
    return await turns.resume(rt, session_id=row.caller_session_id, user_id=row.user_id, user_role=role)


# --- the caller's resume asks for the result -----------------------------------------------------------


async def resolve(rt: Runtime, session_id: str, call_ids: list[str]) -> dict[str, Any]:
    """The results of the caller session's deferred agent-invoke calls whose task settled."""
    wanted = set(call_ids)
    found: dict[str, Any] = {}
    async with rt.db.read_session() as db:
        stmt = select(A2ATaskSession).where(A2ATaskSession.caller_session_id == session_id,
                                            A2ATaskSession.state.in_(sorted(tasks.TERMINAL_STATES)))
        for row in (await db.execute(stmt)).scalars():
            call_id = _call_id(row)
            if call_id in wanted and call_id not in found:
                found[call_id] = await _result(db, row)
    return found


async def _result(db: Any, row: A2ATaskSession) -> Any:
    """What the caller's model gets for the call: the result the tool would have returned at once."""
    reply = await chat_service.last_assistant_message(db=db, session_id=row.session_id or "")
    agent = await db.get(Agent, row.agent_id) if row.agent_id is not None else None
    slug = agent.slug if agent is not None else "?"
    text = reply.content if reply is not None else ""
    meta = {"agentSlug": slug, "recursionDepth": (row.caller_context or {}).get("recursionDepth"),
            "taskId": row.id, "state": row.state,
            "inputTokens": (reply.input_tokens or 0) if reply else 0,
            "outputTokens": (reply.output_tokens or 0) if reply else 0}
    if row.state == tasks.COMPLETED:
        return model_return(ToolResult.ok(text, **meta))
    return ToolFailed(_failure(slug, row.state, await _rejected(db, reply), reply, text))


def _failure(slug: str, state: str, rejected: list[ChatApproval], reply: AgentMessage | None, text: str) -> str:
    if rejected:
        why = "; ".join(f"'{a.tool_name}'" + (f" (reason: {a.reason})" if a.reason else "") for a in rejected)
        message = f"the user rejected the tool call(s) {why} of agent '{slug}'"
    elif state == tasks.CANCELED:
        message = f"the task of agent '{slug}' was canceled"
    else:
        message = (reply.error if reply is not None and reply.error else None) or f"agent '{slug}' failed"
    return f"{message}. Its reply: {text}" if text else message


# --- start-up ------------------------------------------------------------------------------------------


async def catch_up(rt: Runtime) -> None:
    """Finish what a worker that stopped between a callee's end and its caller's resume left undone."""
    async with rt.db.read_session() as db:
        ended = select(A2ATaskSession).join(AgentSession, AgentSession.id == A2ATaskSession.session_id).where(
            A2ATaskSession.state == tasks.INPUT_REQUIRED, AgentSession.status == IDLE)
        stale = list((await db.execute(ended)).scalars())
        settled = select(A2ATaskSession).join(
            AgentSession, AgentSession.id == A2ATaskSession.caller_session_id).where(
            A2ATaskSession.state.in_(sorted(tasks.TERMINAL_STATES)), AgentSession.status == AWAITING_APPROVAL)
        waiting = list((await db.execute(settled)).scalars())
    for row in stale:
        if (row.caller_context or {}).get("remote"):  # a remote task's session is idle while it asks
            continue
        if await _settle(rt, row):
            waiting.append(row)
    seen: set[str] = set()
    for row in waiting:
        if row.caller_session_id and row.caller_session_id not in seen:
            seen.add(row.caller_session_id)
            await resume_caller(rt, row)


# --- a remote agent's input-required ---------------------------------------------------------------------


def _waiting_remote(row: A2ATaskSession) -> tuple[str, str] | None:
    """The (remote task id, context id) of a remote task that asks its caller for input, else None."""
    ctx = row.caller_context or {}
    if row.state != tasks.INPUT_REQUIRED or not ctx.get("remote") or not ctx.get("remoteTaskId"):
        return None
    return str(ctx["remoteTaskId"]), str(ctx.get("remoteContextId") or "")


def question_of(row: A2ATaskSession) -> str | None:
    """The question a remote task still asks its calling user (``remote`` keeps it with the task), for a
    panel opened after its stream is gone (a restart, or the buffer expired); None when it asks nothing."""
    context = row.caller_context or {}
    if _waiting_remote(row) is None or "question" not in context:
        return None
    return str(context["question"])


async def answer_remote(rt: Runtime, *, user_id: int, task_id: str, text: str) -> None:
    """Send the calling user's answer to a remote task that asked for input, as the task's next message,
    in the background: its reply streams into the panel's buffer again, and once the remote task ends
    (or asks again) the caller resumes as for a local callee. 404 for anyone but the calling user, 409
    ``task_not_waiting`` when the task asks nothing (any more)."""
    async with rt.db.session() as db:
        row = await service.get_panel_task(db=db, task_id=task_id, user_id=user_id)
        continuation = _waiting_remote(row)
        callee = await db.get(Agent, row.agent_id) if row.agent_id is not None else None
        claim = (update(A2ATaskSession)
                 .where(A2ATaskSession.id == task_id, A2ATaskSession.state == tasks.INPUT_REQUIRED)
                 .values(state=tasks.WORKING, updated_at=utcnow()).returning(A2ATaskSession.id))
        if continuation is None or callee is None or (await db.execute(claim)).scalar_one_or_none() is None:
            raise Conflict("this task does not wait for an answer", code="task_not_waiting")
    extra = {"source": "a2a", "a2a_task_id": row.id, "caller_agent_id": row.caller_agent_id,
             "caller_session_id": row.caller_session_id}
    call = remote.RemoteCall(rt, row, callee, text, extra, service.InvokeOptions().timeout_s, pause=True,
                             continuation=continuation)
    try:
        panel = await remote.open_call(call)  # before the 202: the panel follows this run at once
    except BaseException:
        # it still asks: the answer can be sent again
        await service.update_state(rt=rt, task_id=task_id, state=tasks.INPUT_REQUIRED)
        raise
    rt.runs.spawn(_continue_remote(rt, row, call, panel))


async def _continue_remote(rt: Runtime, row: A2ATaskSession, call: remote.RemoteCall, panel: Any) -> None:
    async with rt.runs.lease(task_lease(row.id)):
        outcome = await remote.run_call(call, panel)
    if outcome.state != tasks.INPUT_REQUIRED:
        await resume_caller(rt, row)
