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

The callee's approval may be answered, and its turn end, before the caller's turn is saved (a slower
tool call beside the agent-invoke one keeps the caller's turn running): 2's resume then finds the caller
busy, so the caller's own pause, once saved, resumes it when one of the calls it waits for has settled
(``turn_ended`` of the caller's turn).

A worker that dies between 2's two steps, or before 2 ran at all (the engine gives the callee's session
back before it tells ``turn_ended``; the callee's run itself died and another worker closed it), is made
up for by ``catch_up``: callee turns that ended (their session idle) with their task still waiting are
settled, and callers whose task settled while they wait are resumed. It runs at start-up, and with other
workers about (shared leases) on every sweep of every live worker, every third of a lease's TTL
(``sweep``, ``RunRegistry.on_sweep``), so a caller's chat goes on within seconds while the others run,
not at the next restart. One process has nobody to make up for but its own last run: its start-up does.
Racing a live worker that is between the two steps is safe: settling is a conditional update that only
one wins (the loser resumes nothing), and resuming is safe to try twice: a second try finds the session
busy or no longer paused (``turns.resume``, whose lease and ``claim_session`` let one resume through).

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

import contextlib
import logging
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from typing import Any

from pydantic_ai.exceptions import ToolFailed
from sqlalchemy import select, text, update

from agentloft.a2a import remote, service, tasks
from agentloft.a2a.models import A2ATaskSession
from agentloft.agents.models import REMOTE, Agent
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

# How far back a sweep looks for settled tasks whose caller still waits (``sweep``), in seconds.
SWEEP_LOOKS_BACK_S = 3600.0
# The conditions of the partial indexes of the tasks waiting and of the sessions paused (migration
# 0039_waiting_tasks), as literals: a bound value would keep both databases from using them, and every
# sweep would read every task ever run.
_WAITING = text(f"a2a_task_sessions.state = '{tasks.INPUT_REQUIRED}'")
_PAUSED = text(f"agent_sessions.status = '{AWAITING_APPROVAL}'")


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
    buffer is the task's) that did not pause again, settle the task and resume its caller. A turn that
    paused on agent-invoke calls alone may be a caller whose callee ended first (``_settled_first``).
    Any other turn costs nothing: no task's buffer, no deferred call, no read."""
    paused = getattr(result, "status", None) == AWAITING_APPROVAL
    if paused and getattr(result, "deferred", None) and not getattr(result, "pending", None):
        await _settled_first(rt, session_id, list(result.deferred))
    task_id = key.removeprefix("a2a_")
    if task_id == key or paused:
        return
    async with rt.db.read_session() as db:
        row = await db.get(A2ATaskSession, task_id)
    if row is None or row.session_id != session_id or row.state != tasks.INPUT_REQUIRED:
        return
    if await _settle(rt, row):
        await resume_caller(rt, row)


async def _settled_first(rt: Runtime, session_id: str, call_ids: list[str]) -> None:
    """A caller's turn paused on deferred calls: resume it if one's task settled already. Its callee's
    approval may be answered, and the callee's turn end, while the caller's turn still runs (a slower
    tool call beside the agent-invoke one): that end's resume found the caller's session busy, and
    nothing else would resume it (the sweep leaves callers whose session changed after the settle).
    Resuming early is harmless: ``call_pending`` while another call still waits."""
    wanted = set(call_ids)
    async with rt.db.read_session() as db:
        stmt = select(A2ATaskSession).where(A2ATaskSession.caller_session_id == session_id,
                                            A2ATaskSession.state.in_(sorted(tasks.TERMINAL_STATES)))
        settled = [row for row in (await db.execute(stmt)).scalars() if _call_id(row) in wanted]
    if settled:
        await resume_caller(rt, settled[0])


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


# --- making up for a worker that died ------------------------------------------------------------------


async def catch_up(rt: Runtime, *, settled_since: datetime | None = None) -> None:
    """Finish what a worker that stopped between a callee's end and its caller's resume left undone:
    settle the tasks whose callee's turn ended while they still wait (the callee's session is idle, so
    no turn of it runs or is about to: a pause leaves it ``awaiting_approval``), then resume the callers
    whose task settled while they wait for it.

    At start-up every such caller is tried. The sweep of a live worker (``sweep``) passes
    ``settled_since`` and tries only callers of tasks settled since then that have not moved since the
    task settled (their session's last change is older than the task's): the session of a caller that
    resumed already and paused again on something else is not taken (its lease) and let go again every
    few seconds by every worker, which could also make a user's last answer to it find it busy.

    Safe alongside a live worker doing the same for its own callee (or another worker's sweep): settling
    is a conditional update only one of them wins, and a resume that comes second finds the caller's
    session busy or no longer waiting (``turns.resume``)."""
    async with rt.db.read_session() as db:
        ended = (select(A2ATaskSession)
                 .join(AgentSession, AgentSession.id == A2ATaskSession.session_id)
                 .join(Agent, Agent.id == A2ATaskSession.agent_id)
                 .where(_WAITING, AgentSession.status == IDLE,
                        Agent.kind != REMOTE))  # a remote task's session is idle while it asks
        stale = list((await db.execute(ended)).scalars())
        settled = select(A2ATaskSession).join(
            AgentSession, AgentSession.id == A2ATaskSession.caller_session_id).where(
            A2ATaskSession.state.in_(sorted(tasks.TERMINAL_STATES)), _PAUSED)
        if settled_since is not None:
            settled = settled.where(A2ATaskSession.updated_at >= settled_since,
                                    AgentSession.updated_at <= A2ATaskSession.updated_at)
        waiting = list((await db.execute(settled)).scalars())
    for row in stale:
        async with _logged(f"settling task {row.id}"):
            if await _settle(rt, row):
                waiting.append(row)
    seen: set[str] = set()
    for row in waiting:
        if row.caller_session_id and row.caller_session_id not in seen:
            seen.add(row.caller_session_id)
            async with _logged(f"resuming the caller of task {row.id}"):
                await resume_caller(rt, row)


@contextlib.asynccontextmanager
async def _logged(what: str) -> AsyncIterator[None]:
    """One task that cannot be made up (its caller's agent gone, a bug) is logged and left, never keeping
    the others back: a sweep meets it again every few seconds."""
    try:
        yield
    except Exception:
        log.exception("%s failed", what)


async def sweep(rt: Runtime) -> None:
    """``catch_up`` for a live worker, with other workers about (``RunRegistry.on_sweep``): what a worker
    that died after saving a callee's turn left undone is made up within a sweep or two, while the
    others run on. Callers are looked for among tasks settled within the last ``SWEEP_LOOKS_BACK_S``:
    every live worker sweeps every third of a lease's TTL, so a caller left waiting is seen many times
    over before it falls out, and the bound keeps a worker whose clock is behind (a caller's change
    stamped before the settle that came first) from trying that caller for ever; older ones are the next
    start's."""
    since = utcnow() - timedelta(seconds=SWEEP_LOOKS_BACK_S)
    await catch_up(rt, settled_since=since)


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
