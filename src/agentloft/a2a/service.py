"""A2A tasks: one service for both callers, the ``agent-invoke`` tool and the public A2A server.

A task is a callee session owned by the calling user plus its ``a2a_task_sessions`` row. Running it means
running one turn of the callee agent through the chat engine, streaming into buffer ``a2a_<taskId>``, with
both messages stored as ``source='a2a'`` and the caller's agent and session. Nothing here builds HTTP
responses; the router and the A2A server adapt these functions.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.a2a import remote
from agentloft.a2a.models import A2ATaskSession
from agentloft.a2a.tasks import (
    CANCELED,
    COMPLETED,
    FAILED,
    INPUT_REQUIRED,
    SUBMITTED,
    WORKING,
    Ending,
    TaskOutcome,
    buffer_key,
    is_terminal,
)
from agentloft.agents.models import LOCAL, REMOTE, Agent
from agentloft.audit import service as audit_service
from agentloft.chat import engine, wire
from agentloft.chat import service as chat_service
from agentloft.chat.leases import task_lease
from agentloft.chat.models import AWAITING_APPROVAL, COMPLETE, STOPPED, TurnStatus
from agentloft.core.db import one_or_404, utcnow
from agentloft.core.errors import NotFound
from agentloft.core.runtime import Runtime
from agentloft.groups import access

log = logging.getLogger(__name__)

# The chain of agent ids a nested invocation came through, carried in ``ToolContext.extra``.
CHAIN_KEY = "a2a_chain"
# How a task ends for each way its callee's turn ended; any other (failed, interrupted, waiting for an
# approval A2A cannot give) fails it.
_ENDINGS: dict[TurnStatus, Ending] = {COMPLETE: COMPLETED, STOPPED: CANCELED}


class InvocationError(Exception):
    """The call cannot start (unknown agent, not allowed, recursion). No task exists, no panel opens."""


@dataclass
class Caller:
    """Who starts a task: the user it runs as, and for nested calls the calling agent and session."""

    user_id: int
    user_role: str
    group_ids: frozenset[int] = frozenset()  # the user's: they decide which agents the call may reach
    agent_id: int | None = None
    session_id: str | None = None
    recursion_depth: int = 0
    chain: list[int] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict)

    @property
    def viewer(self) -> access.Viewer:
        return access.Viewer(role=self.user_role, group_ids=self.group_ids)

    def path(self) -> list[int]:
        """The agents this call came through, the calling agent last (cycle detection)."""
        if self.chain:
            return [*self.chain]
        return [self.agent_id] if self.agent_id is not None else []


# ---------------------------------------------------------------- lookups


async def get_callable_agent(*, db: AsyncSession, slug: str, local_only: bool = False,
                             viewer: access.Viewer | None = None) -> Agent:
    """An agent other agents and A2A clients may call: enabled, and a local one marked "Callable over A2A"
    (served to A2A clients and callable by agent-invoke). A remote agent is registered to be called, so
    agent-invoke calls every enabled one, the box aside (it would only hide the agent behind a second
    switch: the README promises it is called like a local agent); the A2A server serves local agents
    only (``local_only``)."""
    stmt = select(Agent).where(Agent.slug == slug, Agent.enabled.is_(True))
    if local_only:
        stmt = stmt.where(Agent.kind == LOCAL, Agent.a2a_callable.is_(True))
    else:
        stmt = stmt.where(or_(Agent.a2a_callable.is_(True), Agent.kind == REMOTE))
    # the calling user's groups decide (``groups.access``); without a user, only agents open to everyone
    stmt = stmt.where(access.allowed("agent", Agent.id, viewer or access.Viewer(role=None)))
    return await one_or_404(db, stmt, NotFound(f"agent '{slug}' is not available over A2A", code="a2a_agent_not_found"))


async def get_task_row(*, db: AsyncSession, task_id: str, user_id: int) -> A2ATaskSession:
    stmt = select(A2ATaskSession).where(A2ATaskSession.id == task_id, A2ATaskSession.user_id == user_id)
    return await one_or_404(db, stmt, NotFound("task not found", code="a2a_task_not_found"))


async def get_panel_task(*, db: AsyncSession, task_id: str, user_id: int) -> A2ATaskSession:
    """The task behind a side panel. Only the user who owns the calling session may watch it; the
    task row records that user (the callee runs as them), so anyone else gets 'not found'."""
    return await get_task_row(db=db, task_id=task_id, user_id=user_id)


async def set_state(*, db: AsyncSession, task_id: str, state: str) -> None:
    await db.execute(
        update(A2ATaskSession).where(A2ATaskSession.id == task_id).values(state=state, updated_at=utcnow())
    )


# ---------------------------------------------------------------- creating and running


def check_invocation(
    *, callee: Agent, caller: Caller, max_depth: int, allowed: list[str] | None = None
) -> None:
    """Refuse calls that must not start: a slug the tool may not call, a cycle, too deep a chain."""
    if allowed and callee.slug not in allowed:
        raise InvocationError(f"this tool may not call agent '{callee.slug}'")
    if callee.id in caller.path():
        raise InvocationError(f"agent '{callee.slug}' is already in this call chain (a cycle)")
    if caller.recursion_depth + 1 > max_depth:
        raise InvocationError(f"recursion depth {caller.recursion_depth + 1} exceeds the limit of {max_depth}")


async def create_task(
    *, rt: Runtime, callee: Agent, caller: Caller, task_id: str | None = None
) -> A2ATaskSession:
    """Create the callee's session (owned by the calling user, hidden from the session list) and the task
    row. Committed at once, so a panel can subscribe and other processes can see it."""
    task_id = task_id or new_task_id()
    async with rt.db.session() as db:
        session = await chat_service.create_session(
            db=db, user_id=caller.user_id, agent_id=callee.id, title=f"A2A: {callee.name}", hidden=True
        )
        row = A2ATaskSession(
            id=task_id,
            session_id=session.id,
            agent_id=callee.id,
            user_id=caller.user_id,
            caller_agent_id=caller.agent_id,
            caller_session_id=caller.session_id,
            caller_context={"recursionDepth": caller.recursion_depth + 1, "chain": [*caller.path(), callee.id],
                            **caller.context},
            state=SUBMITTED,
        )
        db.add(row)
        await db.flush()
        await _record_delegation(db, callee=callee, caller=caller, task_id=task_id)
    return row


async def _record_delegation(db: AsyncSession, *, callee: Agent, caller: Caller, task_id: str) -> None:
    """``a2a.delegation`` in the task's own transaction: no task without its event. The caller agent is
    None for an outside A2A client (``via: a2a``)."""
    await audit_service.record(db=db, type="a2a.delegation", actor=audit_service.Actor(id=caller.user_id),
                               target=f"task:{task_id}", detail={
                                   "taskId": task_id, "via": caller.context.get("via"),
                                   "callerAgentId": caller.agent_id, "callerSessionId": caller.session_id,
                                   "calleeAgentId": callee.id, "calleeAgentSlug": callee.slug,
                                   "calleeKind": callee.kind, "recursionDepth": caller.recursion_depth + 1})


def new_task_id() -> str:
    """A2A task ids are UUIDs, as the protocol's own clients and servers make them."""
    return str(uuid.uuid4())


def _message_extra(task_id: str, caller: Caller) -> dict[str, Any]:
    """The columns both messages of a task carry (seed 003, 3.1.1)."""
    return {"source": "a2a", "a2a_task_id": task_id, "caller_agent_id": caller.agent_id,
            "caller_session_id": caller.session_id}


def _limited(agent: Agent, max_output_tokens: int | None) -> Agent:
    """A detached copy of the callee with the tool's output limit applied (never raised above the agent's
    own). The engine reads the row's fields; the stored agent is left untouched."""
    if not max_output_tokens or max_output_tokens >= agent.max_output_tokens:
        return agent
    copy = Agent(**{c.key: getattr(agent, c.key) for c in Agent.__table__.columns})
    copy.max_output_tokens = max_output_tokens
    return copy


async def run_task(
    *,
    rt: Runtime,
    task: A2ATaskSession,
    callee: Agent,
    caller: Caller,
    input_text: str,
    timeout_s: float | None = None,
    max_output_tokens: int | None = None,
    on_chunk: engine.ChunkListener | None = None,
    pause_on_approval: bool = False,
) -> TaskOutcome:
    """Run the callee for one turn into buffer ``a2a_<taskId>`` and record the outcome on the task.
    ``on_chunk``: called with the turn's chunks as they stream (``engine.TurnRequest.on_chunk``).
    ``pause_on_approval``: a callee that pauses for a tool approval leaves the task ``input_required``
    (its caller's user answers it in the side panel: ``a2a.waiting``); without it (an outside A2A
    client, who has nobody to ask) the task fails.

    A timeout cancels the run, writes an error chunk to the panel's buffer and fails the task. Model
    errors come back from the engine as a failed turn (the engine already wrote the error chunk)."""
    if task.session_id is None:  # ``create_task`` always sets it; the column allows NULL as the seed's does
        raise InvocationError("this task has no session to run in")
    await update_state(rt=rt, task_id=task.id, state=WORKING)
    extra = _message_extra(task.id, caller)
    chain = [*caller.path(), callee.id]
    turn = engine.run_turn(rt, engine.TurnRequest(
        user_id=caller.user_id,
        user_role=caller.user_role,
        group_ids=caller.group_ids,
        agent=_limited(callee, max_output_tokens),
        session_id=task.session_id,
        user_text=input_text,
        buffer_key=buffer_key(task.id),
        message_extra=extra,
        recursion_depth=caller.recursion_depth + 1,
        tool_extra={CHAIN_KEY: chain},
        on_chunk=on_chunk,
    ))
    running = asyncio.create_task(turn)
    try:
        done, _ = await asyncio.wait({running}, timeout=timeout_s)
    except asyncio.CancelledError:
        running.cancel()
        await asyncio.shield(_finish_cancel(rt, task.id, running))
        raise
    if not done:
        # Tell the panel first (the engine closes the buffer when its run is cancelled), then stop the run.
        message = f"agent '{callee.slug}' did not answer within {timeout_s:g} s"
        await append_error(rt=rt, task_id=task.id, message=message)
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await update_state(rt=rt, task_id=task.id, state=FAILED)
        return TaskOutcome(task_id=task.id, state=FAILED, text="", error=message)
    try:
        result = running.result()
    except Exception as exc:  # the turn could not start (no model configured, session busy, ...)
        message = getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}"
        await fail_buffer(rt=rt, task_id=task.id, message=message)
        await update_state(rt=rt, task_id=task.id, state=FAILED)
        return TaskOutcome(task_id=task.id, state=FAILED, text="", error=message)
    state: Ending = _ENDINGS.get(result.status, FAILED)
    error = result.error
    if result.status == AWAITING_APPROVAL and pause_on_approval:
        state, error = INPUT_REQUIRED, "the called agent waits for the approval of a tool call"
    elif result.status == AWAITING_APPROVAL:
        error = "the called agent needs a tool approval, which A2A calls cannot give"
        await append_error(rt=rt, task_id=task.id, message=error)
    await update_state(rt=rt, task_id=task.id, state=state)
    return TaskOutcome(
        task_id=task.id, state=state, text=result.text or "", error=error if state != COMPLETED else None,
        input_tokens=result.input_tokens or 0, output_tokens=result.output_tokens or 0,
    )


async def _finish_cancel(rt: Runtime, task_id: str, running: asyncio.Task[Any]) -> None:
    await asyncio.gather(running, return_exceptions=True)
    await update_state(rt=rt, task_id=task_id, state=CANCELED)


async def update_state(*, rt: Runtime, task_id: str, state: str) -> None:
    """``set_state`` in a transaction of its own."""
    async with rt.db.session() as db:
        await set_state(db=db, task_id=task_id, state=state)


async def wait_for_buffer(*, rt: Runtime, task_id: str, limit_s: float = 10.0) -> bool:
    """Whether the task has a buffer to follow. The panel learns the task id just before the engine opens
    the buffer, so for a task that is still starting, wait (briefly) for it to appear."""

    buffers, key = rt.buffers, buffer_key(task_id)
    if await buffers.meta(key) is not None:
        return True
    async with rt.db.session() as db:
        row = await db.get(A2ATaskSession, task_id)
    # ended (its buffer expired, or it failed before opening), or waiting for the user: no buffer is coming
    if row is None or is_terminal(row.state) or row.state == INPUT_REQUIRED:
        return await buffers.meta(key) is not None
    return await buffers.wait_open(key, limit_s=limit_s)


async def fail_buffer(*, rt: Runtime, task_id: str, message: str) -> None:
    """A task that failed before the engine opened its buffer still tells its panel why."""

    buffers, key = rt.buffers, buffer_key(task_id)
    if await buffers.meta(key) is None or not await buffers.is_active(key):
        await buffers.open(key, {"taskId": task_id})
    await append_error(rt=rt, task_id=task_id, message=message)
    await buffers.close(key, error=message)


async def append_error(*, rt: Runtime, task_id: str, message: str) -> None:
    """Write an ``error`` chunk (a protocol-valid UI stream chunk) into the panel's buffer."""

    await rt.buffers.append(buffer_key(task_id), wire.error_frame(message))


# ---------------------------------------------------------------- the agent-invoke path


@dataclass
class InvokeOptions:
    max_recursion_depth: int = 3
    timeout_s: float = 120.0
    max_output_tokens: int | None = 2000
    allowed_agents: list[str] = field(default_factory=list)


Emit = Callable[[str, dict[str, Any]], Awaitable[None]]


async def invoke_agent_via_a2a(
    *, rt: Runtime, agent_slug: str, input_text: str, caller: Caller, options: InvokeOptions, emit: Emit
) -> TaskOutcome:
    """Hand a sub-task to another agent (seed 003, 3.2.1): validate, create the task, tell the caller's
    stream (``data-a2a-task-started``) so the panel can subscribe, run the callee, return its reply.

    Raises ``InvocationError`` before any task exists (no panel opens)."""
    async with rt.db.session() as db:
        try:
            callee = await get_callable_agent(db=db, slug=agent_slug, viewer=caller.viewer)
        except NotFound as exc:
            raise InvocationError(exc.message) from exc
    check_invocation(callee=callee, caller=caller, max_depth=options.max_recursion_depth,
                     allowed=options.allowed_agents)
    task_id = new_task_id()
    async with rt.runs.lease(task_lease(task_id)):  # another worker finishes the task if this one dies
        task = await create_task(rt=rt, callee=callee, caller=caller, task_id=task_id)
        # the callee's session: the panel answers the callee's approvals through that session's route
        await emit("a2a-task-started", {"taskId": task.id, "calleeAgentSlug": callee.slug,
                                        "calleeAgentName": callee.name, "calleeSessionId": task.session_id})
        if callee.kind == REMOTE:
            return await remote.run_remote_task(
                rt=rt, task=task, callee=callee, input_text=input_text, extra=_message_extra(task.id, caller),
                timeout_s=options.timeout_s, pause=True,
            )
        return await run_task(rt=rt, task=task, callee=callee, caller=caller, input_text=input_text,
                              timeout_s=options.timeout_s, max_output_tokens=options.max_output_tokens,
                              pause_on_approval=True)

