"""The chat engine: the only code that talks to a model. User chat, the plain LLM chat and A2A tasks all
run their turns through it.

Public interface (stable; other domains call only these):

``await run_turn(rt, TurnRequest(user_id=, user_role=, agent=, session_id=, user_text=, buffer_key=None,
                 message_extra=None, recursion_depth=0, tool_extra=None)) -> TurnResult``
    Run one turn of a session to its end in the *current* task and return. It saves the user message,
    creates the assistant message, streams Vercel AI UI-message-stream chunks (SSE frames) into the
    stream buffer ``buffer_key`` (default: the session id), and on finish / pause / error / stop saves
    the assistant message (text, parts, usage, status) and the model history on the session.
    - ``agent``: an ``agents.models.Agent`` row, or ``None`` for the plain LLM chat (default model,
      the tools ``tools.loading.get_enabled_tools_for_llm`` returns for the user).
    - ``message_extra``: extra column values written on BOTH messages of the turn (A2A passes
      ``{"source": "a2a", "a2a_task_id": ..., "caller_agent_id": ..., "caller_session_id": ...}``
      once its migration adds those columns). Unknown column names are an error, never dropped.
    - ``recursion_depth`` / ``tool_extra`` are handed to every tool in ``ToolContext``.
    - ``on_chunk``: called with each chunk of the run's stream as it is framed for the buffer
      (``chat.wire``, a lone surrogate mended), for a caller in this process that passes the reply on as it streams
      (``chat.relay``: the A2A server, the OpenAI-compatible API) instead of reading frames back.
    - Raises ``errors.Conflict`` (code ``session_busy``) when the session already runs a turn or waits
      for an approval. Never raises for model or tool failures: they end up in the result.
    The chat endpoints use ``prepare_turn`` (the same ``TurnRequest``) in the request (bad input is a
    clean HTTP error) and ``drive`` in a background task (``chat.turns``), so the run outlives the
    request; A2A simply awaits ``run_turn`` inside its own task. Either way the run registers its task,
    so ``POST …/stop`` works.

``TurnResult``: ``status`` (``complete`` | ``failed`` | ``stopped`` | ``awaiting_approval`` |
    ``interrupted`` (server shutdown); a cancellation of the caller's task is saved as ``stopped`` and
    re-raised, only a user's stop through ``POST …/stop`` returns normally),
    ``text`` (the assistant's text of this turn), ``message_id`` (assistant message), ``input_tokens`` /
    ``output_tokens`` (summed over every step and every resumed run of the message), ``error`` (readable
    message or None), ``pending`` (tool calls awaiting approval: ``[{toolCallId, toolName, input}]``),
    ``refusal`` (the ``BudgetExceeded`` that stopped a turn between its model calls, or None).

``await resume_turn(rt, *, session_id, user_id, user_role, buffer_key=None, ...) -> TurnResult``
    Continue a session paused on approvals once every pending call is answered (``service`` records
    the answers; the approvals endpoint goes through ``chat.turns.answer``).

Buffers (``chat.buffers``): ``rt.buffers`` returns the app's ``StreamBuffers``; keys are plain
strings (a session id, or ``a2a_<taskId>``). ``subscribe(key)`` replays the current run's chunks then
follows live; ``sse_response(...)`` in ``chat.router`` turns a subscription into an HTTP response.

Custom chunks: a tool calls ``await ctx.emit("a2a-task-started", {...})``; the engine appends a
``data-a2a-task-started`` chunk to the caller's buffer at once (while the tool is still running).

The engine never imports a tool type nor ``a2a``; tools come from ``tools.loading`` and run through
``tools.runner.run_tool`` (see ``chat.toolset``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import DeferredToolRequests, DeferredToolResults, ToolDenied
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter, ModelRequest, ModelResponse, UserContent
from pydantic_ai.settings import ModelSettings
from pydantic_ai.ui.vercel_ai.response_types import (
    AbortChunk,
    BaseChunk,
    DoneChunk,
    ErrorChunk,
    FinishChunk,
    TextDeltaChunk,
)
from pydantic_core import PydanticSerializationError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents import service as agents_service
from agentloft.agents.models import Agent
from agentloft.audit import service as audit_service
from agentloft.chat import approvals as chat_approvals
from agentloft.chat import knowledge as chat_knowledge
from agentloft.chat import service, turn_log, wire
from agentloft.chat.budgeted import BudgetedModel
from agentloft.chat.leases import session_lease
from agentloft.chat.models import (
    AWAITING_APPROVAL,
    COMPLETE,
    FAILED,
    IDLE,
    INTERRUPTED,
    STOPPED,
    STREAMING,
    AgentMessage,
    AgentSession,
    TurnStatus,
)
from agentloft.chat.parts import PartsCollector
from agentloft.chat.runs import StopReason, current_stop_reason
from agentloft.chat.steps import TurnSteps
from agentloft.chat.stream import EngineEventStream, failure_chunk
from agentloft.chat.toolset import RunScope, RunToolset
from agentloft.core.db import whole_characters
from agentloft.core.errors import AppError, Conflict, NotFound
from agentloft.core.runtime import Runtime
from agentloft.core.tracing import traced_turn
from agentloft.groups import access
from agentloft.llm import service as llm_service
from agentloft.llm.models import ModelConfig
from agentloft.tools import loading as tools_loading
from agentloft.tools.runner import RunTool
from agentloft.usage import budgets
from agentloft.usage import service as usage_service
from agentloft.usage.models import Source

log = logging.getLogger(__name__)

ChunkListener = Callable[[BaseChunk], None]  # must not raise: it runs inside the run's stream

class NoModel(AppError):
    status = 409
    code = "no_model"


@dataclass
class TurnResult:
    status: TurnStatus
    text: str
    message_id: str
    input_tokens: int = 0
    output_tokens: int = 0
    error: str | None = None
    pending: list[dict[str, Any]] = field(default_factory=list)
    # ids of tool calls whose result comes from outside the run (``ToolResult.defer``): the turn waits
    # for them as for approvals (``awaiting_approval``) and resumes once they have one
    deferred: list[str] = field(default_factory=list)
    # the budget that stopped the turn between two model calls (the turn is ``failed``), else None
    refusal: budgets.BudgetExceeded | None = None


@dataclass(frozen=True, kw_only=True)
class TurnRequest:
    """One turn to start: who asks, with which agent (None: the plain LLM chat), in which session, what
    they said, and the caller's extras (see the module's doc). ``prepare_turn`` and ``run_turn`` take it
    whole, so a new field is added in one place."""

    user_id: int
    user_role: str
    agent: Agent | None
    session_id: str
    user_text: str
    # the user's group ids (``groups.access.viewer_of``): which agents, models and tools they may use
    group_ids: frozenset[int] = frozenset()
    buffer_key: str | None = None
    message_extra: dict[str, Any] | None = None
    recursion_depth: int = 0
    tool_extra: dict[str, Any] | None = None
    # refuse the turn when the user would have more chats than this writing a reply (the chat endpoints
    # set it; A2A tasks do not: ``service.refuse_too_many_running``)
    running_limit: int | None = None
    # the files the user message keeps (``chat.attachments.kept``), and the model input made of the text
    # and those files (``chat.attachments.model_input``; None: the text alone)
    attachments: list[dict[str, Any]] | None = None
    prompt: str | list[UserContent] | None = None
    # the user's own knowledge collections the session searches from this turn on (``chat.knowledge``;
    # None: those it has)
    knowledge_ids: list[str] | None = None
    # called with every chunk of the run's stream as the run makes it, for a caller in this process
    # that reads the reply as it streams (``chat.relay``) rather than the buffer's frames back
    on_chunk: ChunkListener | None = None


@dataclass
class PreparedTurn:
    """Everything a run needs, gathered while the caller still holds its request (so bad input is a
    clean HTTP error) and carried into the background task. What can fail once the session is claimed
    (building the model from its configuration, reading the history) is left to the run, which ends a
    failure like any other: an ``error`` chunk, the message ``failed``, the session idle."""

    session_id: str
    buffer_key: str
    message_id: str
    scope: RunScope
    model_row: ModelConfig
    model_config_id: int | None
    system_prompt: str
    max_steps: int
    max_tokens: int | None
    tools: list[RunTool]
    history: str | None  # the session's model history (JSON), read when the run starts
    prompt: str | list[UserContent] | None = None
    deferred: DeferredToolResults | None = None
    parts: list[dict[str, Any]] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    # what the user had left of their budgets when the turn started (None: no budget applies), and the
    # source its usage is recorded under (``usage.service``)
    allowance: budgets.Allowance | None = None
    usage_source: Source = "chat"
    agent_slug: str | None = None  # None: the plain LLM chat (for the turn's trace span)
    on_chunk: ChunkListener | None = None  # ``TurnRequest.on_chunk``
    started: float = field(default_factory=time.perf_counter)  # when its request began to prepare it


# --- models and tools --------------------------------------------------------------------------------


async def _model_row(db: AsyncSession, agent: Agent | None, viewer: access.Viewer,
                     limits: access.Limits) -> ModelConfig:
    """The agent's own model (whoever may use the agent may use the model its admin chose for it), else
    the default model the caller may use."""
    if agent is not None and agent.model_id is not None:
        try:
            row = await llm_service.get_model(db=db, model_id=agent.model_id)
            if row.enabled:
                return row
        except NotFound:
            pass
    row = await llm_service.default_model(db=db, viewer=viewer, limits=limits)
    if row is None:
        raise NoModel("no model is configured; an administrator has to add one first")
    return row


@dataclass
class TurnInputs:
    """What a turn reads before it writes: the model row and the tools (shared between turns through the
    read cache: read-only)."""

    model_row: ModelConfig
    tools: list[RunTool]
    viewer: access.Viewer  # whom they were read for: the tools' context carries the same groups


async def load_inputs(db: AsyncSession, rt: Runtime, *, agent: Agent | None, user_id: int,
                      viewer: access.Viewer) -> TurnInputs:
    """Read the turn's model and tools in the caller's session (``NoModel`` when there is no model);
    ``agent_not_found`` when the caller may not use the agent (``groups.access``), on every path that
    runs a turn (chat, regenerate, edit, an approval's resume, agent-invoke, A2A)."""
    limits = await access.load_limits(db=db, viewer=viewer)
    if agent is not None and not limits.allows(viewer, "agent", agent.id):
        raise agents_service.agent_not_found(agent.slug)
    model_row = await _model_row(db, agent, viewer, limits)
    return TurnInputs(model_row=model_row, tools=await _tools(db, rt, agent, user_id, viewer, limits),
                      viewer=viewer)


async def chat_inputs(rt: Runtime, *, agent_slug: str | None, user_id: int,
                      user_role: str) -> tuple[Agent | None, TurnInputs]:
    """The enabled agent named ``agent_slug`` (None: the plain LLM chat) and its turn inputs, through the
    read cache (``agentloft.core.readcache``): they change only when an admin edits agents, models, tools
    or who they are limited to. Keyed by role and groups, not user: which agent, model and tools a caller
    gets depends on those alone. The user's groups are read here, once per turn (``viewer_of``)."""
    viewer = await access.viewer_of(rt.db, user_id=user_id, role=user_role)

    async def read() -> tuple[Agent | None, TurnInputs]:
        async with rt.db.read_session() as db:
            agent = None
            if agent_slug is not None:
                agent = await agents_service.get_enabled_agent_by_slug(db=db, slug=agent_slug)
            return agent, await load_inputs(db, rt, agent=agent, user_id=user_id, viewer=viewer)

    return await rt.db.cache.load("chat_config", (agent_slug, user_role, viewer.group_ids), read)


async def _tools(db: AsyncSession, rt: Runtime, agent: Agent | None, user_id: int, viewer: access.Viewer,
                 limits: access.Limits) -> list[RunTool]:
    if agent is None:
        return await tools_loading.get_enabled_tools_for_llm(db=db, rt=rt, user_id=user_id, user_role=viewer.role,
                                                             group_ids=viewer.group_ids, limits=limits)
    return await tools_loading.load_tools_for_agent(db=db, rt=rt, agent_id=agent.id, user_role=viewer.role,
                                                    group_ids=viewer.group_ids, limits=limits)


def _history(raw: str | None) -> list[ModelMessage]:
    return list(ModelMessagesTypeAdapter.validate_json(raw)) if raw else []


async def _agent_of_session(db: AsyncSession, kind: str, agent_id: int | None) -> Agent | None:
    if kind == "llm":
        return None
    if agent_id is None:
        raise NotFound("the agent of this session no longer exists", code="agent_not_found")
    agent = await agents_service.get_agent(db=db, agent_id=agent_id)
    if not agent.enabled:
        raise NotFound("the agent of this session is disabled", code="agent_not_found")
    return agent


async def check_session_agent(db: AsyncSession, *, session: AgentSession, viewer: access.Viewer) -> None:
    """404 ``agent_not_found`` unless the session's agent could run a turn for ``viewer`` (its owner): it
    exists, is enabled and is not limited to groups they are outside. Asked before an approval's answer
    is recorded, since the resume it leads to asks the same (``_prepare_resume``)."""
    agent = await _agent_of_session(db, session.kind, session.agent_id)
    if agent is not None:
        limits = await access.load_limits(db=db, viewer=viewer)
        if not limits.allows(viewer, "agent", agent.id):
            raise agents_service.agent_not_found(agent.slug)


# --- preparing a turn --------------------------------------------------------------------------------


async def prepare_turn(
    rt: Runtime,
    request: TurnRequest,
    *,
    create: service.NewSession | None = None,
    inputs: TurnInputs | None = None,
) -> PreparedTurn:
    """Claim the session (or create it with ``create``), save the user message and an empty assistant
    message, open the buffer. ``inputs``: model and tools the caller already read (``load_inputs``)."""
    r, agent = request, request.agent
    if inputs is None:
        async with rt.db.read_session() as db:  # reads only
            inputs = await load_inputs(db, rt, agent=agent, user_id=r.user_id,
                                       viewer=access.Viewer(role=r.user_role, group_ids=r.group_ids))
    async with _claimed(rt, r.session_id):
        async with rt.db.session() as db:  # one short write transaction
            allowance = await _refuse_over(rt, db, user_id=r.user_id, model=inputs.model_row)
            reply_id, raw_history, knowledge_ids = await service.begin_turn(
                db=db, session_id=r.session_id, user_id=r.user_id, agent_id=agent.id if agent else None,
                user_text=r.user_text, model_id=inputs.model_row.id, extra=r.message_extra, create=create,
                running_limit=r.running_limit, attachments=r.attachments, knowledge_ids=r.knowledge_ids,
            )
            tools = await chat_knowledge.session_tools(db, user_id=r.user_id, collection_ids=knowledge_ids,
                                                       tools=inputs.tools)
        scope = _run_scope(rt, user_id=r.user_id, user_role=r.user_role, viewer=inputs.viewer,
                           session_id=r.session_id, agent=agent, recursion_depth=r.recursion_depth,
                           extra=r.tool_extra)
        return await _open_turn(rt, agent, inputs, session_id=r.session_id, scope=scope,
                                buffer_key=r.buffer_key or r.session_id, message_id=reply_id,
                                history=raw_history, prompt=r.user_text if r.prompt is None else r.prompt,
                                tools=tools, allowance=allowance, usage_source=_source_of(r), on_chunk=r.on_chunk)


@asynccontextmanager
async def _claimed(rt: Runtime, session_id: str) -> AsyncIterator[None]:
    """Hold the session's run lease while a turn is prepared, and give it back if preparing the turn fails in
    any way (cancellation too): once prepared, the lease is the run's, released when ``drive`` saved it.
    Claimed before the database says the session runs, so a sweeper never sees a running session unowned;
    ``errors.Conflict`` (``session_busy``) when another run holds it."""
    lease = session_lease(session_id)
    await rt.runs.claim(lease)
    try:
        yield
    except BaseException:
        await rt.runs.release(lease)
        raise


def _run_scope(rt: Runtime, *, user_id: int, user_role: str, viewer: access.Viewer, session_id: str,
               agent: Agent | None, recursion_depth: int = 0, extra: dict[str, Any] | None = None) -> RunScope:
    """Who the turn's tools run as and where (``chat.toolset``), the same for a new turn, a rewound one
    and a resumed one; ``viewer``'s groups are those its model and tools were read for (``TurnInputs``).
    ``extra`` is copied, so a tool that changes it never changes the caller's ``TurnRequest``."""
    return RunScope(runtime=rt, user_id=user_id, user_role=user_role, group_ids=viewer.group_ids,
                    session_id=session_id, agent_id=agent.id if agent else None, recursion_depth=recursion_depth,
                    extra=dict(extra or {}))


async def _refuse_over(rt: Runtime, db: AsyncSession, *, user_id: int, model: ModelConfig) -> budgets.Allowance | None:
    """``budgets.refuse_over``, with a refusal recorded (``budget.refused``) in a transaction of its own: the
    turn's is rolled back, so that nothing of the refused turn is kept."""
    try:
        return await budgets.refuse_over(rt, db, user_id=user_id, model=model)
    except budgets.BudgetExceeded as exc:
        async with rt.db.session() as own:
            await audit_service.record_many(db=own, entries=[_refusal_entry(user_id, exc, during="start")])
        raise


def _refusal_entry(user_id: int | None, exc: budgets.BudgetExceeded, *, during: budgets.Refusal,
                   session_id: str | None = None) -> audit_service.Entry:
    """A budget's refusal as the audit trail keeps it (``budget.refused``), before a turn or during one."""
    standing = exc.standing
    return audit_service.Entry(type="budget.refused", actor=audit_service.Actor(id=user_id),
                               target=f"budget:{standing.budget.id}",
                               detail=standing.audit_detail(during=during, session_id=session_id))


async def prepare_rewind(
    rt: Runtime,
    *,
    user_id: int,
    user_role: str,
    agent: Agent | None,
    session_id: str,
    message_id: str | None,
    new_text: str | None,
    inputs: TurnInputs,
    running_limit: int | None = None,
    prompt: str | list[UserContent] | None = None,
) -> PreparedTurn:
    """Cut the session back to one user message (edited to ``new_text`` when given) and prepare its turn
    again on the history as it was then (``service.rewind_turn``). Leased like every run, so any worker
    can stop it and no other worker's sweep takes it for the run of a dead worker. ``prompt``: the model
    input made of the message and its files (None: the message's text alone)."""
    async with _claimed(rt, session_id):
        async with rt.db.session() as db:
            allowance = await _refuse_over(rt, db, user_id=user_id, model=inputs.model_row)
            cut = await service.rewind_turn(db=db, session_id=session_id, user_id=user_id, message_id=message_id,
                                            text=new_text, model_id=inputs.model_row.id,
                                            running_limit=running_limit)
            tools = await chat_knowledge.session_tools(db, user_id=user_id, collection_ids=cut.knowledge_ids,
                                                       tools=inputs.tools)
        scope = _run_scope(rt, user_id=user_id, user_role=user_role, viewer=inputs.viewer, session_id=session_id,
                           agent=agent)
        return await _open_turn(rt, agent, inputs, session_id=session_id, scope=scope, buffer_key=session_id,
                                message_id=cut.reply_id, history=cut.history,
                                prompt=cut.prompt if prompt is None else prompt, tools=tools,
                                allowance=allowance)


async def _open_turn(rt: Runtime, agent: Agent | None, inputs: TurnInputs, *, tools: list[RunTool] | None = None,
                     **fields: Any) -> PreparedTurn:
    """A ``PreparedTurn`` with what the agent (or the plain chat's defaults) and the model row decide,
    and its buffer opened; ``tools`` those of the turn when not only ``inputs``' (``chat.knowledge``);
    ``fields`` are the rest of the turn's fields. The session is claimed already:
    if the buffer cannot be opened, the turn is ended as failed (the session freed) before the error
    goes on to the caller."""
    turn = PreparedTurn(
        model_row=inputs.model_row,
        model_config_id=inputs.model_row.id,
        system_prompt=agent.system_prompt if agent else "",
        max_steps=agent.max_steps if agent else 10,
        max_tokens=agent.max_output_tokens if agent else None,
        tools=inputs.tools if tools is None else tools,
        agent_slug=agent.slug if agent else None,
        **fields,
    )
    try:
        await rt.buffers.open(turn.buffer_key, {"sessionId": turn.session_id, "messageId": turn.message_id})
    except BaseException as exc:
        log.exception("could not open the stream of session %s", turn.session_id)
        await asyncio.shield(_abandon(rt, turn, f"The reply could not start: {_internal(exc)}."))
        if isinstance(exc, Exception):
            raise AppError("the reply could not start; try again", code="turn_not_started", status=503) from exc
        raise
    return turn


async def _abandon(rt: Runtime, turn: PreparedTurn, reason: str) -> None:
    """End a turn that cannot run or could not be saved: its message ``failed`` with ``reason``, the
    session idle (history and parts as they were). Last resort, so it logs instead of raising."""
    try:
        async with rt.db.session() as db:
            await service.update_message(db=db, message_id=turn.message_id, status=FAILED, error=reason)
            await service.set_session_state(db=db, session_id=turn.session_id, status=IDLE)
    except Exception:
        log.exception("could not free session %s after a failed turn", turn.session_id)


# The message sources whose turns count as their own usage source; any other message is a chat's.
_TURN_SOURCES: dict[str, Source] = {"a2a": "a2a", "api": "api"}


def _source_of(request: TurnRequest) -> Source:
    """What the turn's usage is recorded as: an A2A task's or an OpenAI-compatible API call's turn
    (``message_extra``'s source), or a chat's."""
    return _TURN_SOURCES.get(str((request.message_extra or {}).get("source")), "chat")


def _internal(exc: BaseException) -> str:
    return f"internal error ({type(exc).__name__})"


def _open_calls(messages: list[ModelMessage], answered: set[str]) -> list[str]:
    """The tool calls of the history's last response that have no result yet and are no approval: those
    the run deferred to outside it (pydantic-ai asks a result of each when it resumes)."""
    returned: set[str] = set()
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            returned.update(getattr(p, "tool_call_id", "") for p in message.parts
                            if p.part_kind in ("tool-return", "retry-prompt"))
        elif isinstance(message, ModelResponse):
            return [c.tool_call_id for c in message.tool_calls
                    if c.tool_call_id not in returned and c.tool_call_id not in answered]
    return []


def _deferred_results(approvals: list[Any], calls: dict[str, Any] | None = None) -> DeferredToolResults:
    answers: dict[str, Any] = {}
    for a in approvals:
        if a.status == "approved":
            answers[a.tool_call_id] = True
        else:
            note = "The user declined this tool call."
            answers[a.tool_call_id] = ToolDenied(f"{note} Reason: {a.reason}" if a.reason else note)
    return DeferredToolResults(approvals=answers, calls=dict(calls or {}))


async def _call_results(rt: Runtime, session_id: str, history: str | None, approvals: list[Any]) -> dict[str, Any]:
    """The results of the calls the paused run deferred (``RunRegistry.resolve_deferred``); 409
    ``call_pending`` while one has none yet (the agent it called still waits for its own approval)."""
    open_calls = _open_calls(_history(history), {a.tool_call_id for a in approvals})
    if not open_calls:
        return {}
    results = await rt.runs.resolve_deferred(session_id, open_calls)
    if any(c not in results for c in open_calls):
        raise Conflict("a tool call still waits for its result", code="call_pending")
    return results


def _resume_key(reply: AgentMessage) -> str:
    """The buffer a resumed reply streams into: that of its turn. An A2A task's turn (its messages carry
    the task id: ``message_extra``) streams into ``a2a_<taskId>``, the buffer its side panel follows."""
    return f"a2a_{reply.a2a_task_id}" if reply.a2a_task_id else reply.session_id


async def prepare_resume(
    rt: Runtime, *, session_id: str, user_id: int, user_role: str, buffer_key: str | None = None
) -> PreparedTurn:
    """Continue a session whose every pending approval is answered, on the same assistant message."""
    async with _claimed(rt, session_id):
        return await _prepare_resume(rt, session_id=session_id, user_id=user_id, user_role=user_role,
                                     buffer_key=buffer_key)


async def _prepare_resume(
    rt: Runtime, *, session_id: str, user_id: int, user_role: str, buffer_key: str | None
) -> PreparedTurn:
    viewer = await access.viewer_of(rt.db, user_id=user_id, role=user_role)
    async with rt.db.session() as db:
        session = await service.get_session_by_id(db=db, session_id=session_id)
        agent = await _agent_of_session(db, session.kind, session.agent_id)
        reply = await service.last_assistant_message(db=db, session_id=session_id)
        if reply is None or reply.status != AWAITING_APPROVAL:
            raise Conflict("nothing in this session waits for approval", code="nothing_to_resume")
        approvals = await service.approvals_of_message(db=db, message_id=reply.id)
        if any(a.status == "pending" for a in approvals):
            raise Conflict("other tool calls still wait for an answer", code="approval_pending")
        calls = await _call_results(rt, session_id, session.model_history, approvals)
        inputs = await load_inputs(db, rt, agent=agent, user_id=user_id, viewer=viewer)
        tools = await chat_knowledge.session_tools(db, user_id=user_id, collection_ids=session.knowledge_ids,
                                                   tools=inputs.tools)
        # not refused here: the answers are saved, and the run's first model call stops it if a budget is
        # used up (``chat.budgeted``), which frees the session as a failed reply
        allowance = await budgets.allowance(rt, db, user_id=user_id, model=inputs.model_row)
        await service.claim_session(db=db, session_id=session_id, from_status=AWAITING_APPROVAL)
        collector = PartsCollector(reply.parts)
        deciders = await chat_approvals.answerer_names(db=db, approvals=approvals, owner_id=session.user_id)
        for a in approvals:
            collector.mark_approval(a.tool_call_id, a.status == "approved", a.reason, by=deciders.get(a.tool_call_id))
        # Saved with the answers from the start: a page opened while the run goes on shows what came
        # before it as the reply's, up to the last answered call, and follows the rest live.
        await service.update_message(db=db, message_id=reply.id, status=STREAMING, parts=collector.parts)
    # an A2A callee's turn goes on as deep in its call chain as it began (``RunRegistry.resume_scope``)
    depth, extra = await rt.runs.resume_scope(reply.a2a_task_id)
    scope = _run_scope(rt, user_id=user_id, user_role=user_role, viewer=viewer, session_id=session_id, agent=agent,
                       recursion_depth=depth, extra=extra)
    return await _open_turn(
        rt, agent, inputs, session_id=session_id, scope=scope, buffer_key=buffer_key or _resume_key(reply),
        message_id=reply.id, tools=tools,
        history=session.model_history, deferred=_deferred_results(approvals, calls), parts=collector.parts,
        input_tokens=reply.input_tokens or 0, output_tokens=reply.output_tokens or 0,
        allowance=allowance, usage_source=_TURN_SOURCES.get(reply.source, "chat"),
    )


# --- driving a run -----------------------------------------------------------------------------------


@dataclass
class _Outcome:
    messages: list[ModelMessage] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    tokens: usage_service.Tokens = field(default_factory=usage_service.Tokens)  # this run's, cache counts too
    output: Any = None
    stopped: StopReason | None = None
    run: TurnSteps | None = None  # the run's steps, once they were built
    model_calls: int = 0  # requests this run sent to the model
    # The closing chunks (``finish``, ``[DONE]``): held back until the turn is saved, because a client
    # acts on ``finish`` at once (answers an approval, sends the next message) and must find the saved
    # state (pending approvals, an idle session) when it does.
    closing: list[str] = field(default_factory=list)


def _settings(rt: Runtime, turn: PreparedTurn) -> ModelSettings:
    settings = ModelSettings(timeout=rt.settings.model_timeout_seconds)
    if turn.max_tokens:
        settings["max_tokens"] = turn.max_tokens
    return settings


async def _agent_events(rt: Runtime, turn: PreparedTurn, outcome: _Outcome) -> AsyncGenerator[Any, None]:
    """The run's pydantic-ai events (``chat.steps``). Everything the run needs is built here, inside the
    stream, so a failure to build it (a model its configuration cannot make, an unreadable history)
    reaches the client as the stream's ``error`` chunk, like a model that fails."""
    model = rt.models.model(llm_service.spec_of(row=turn.model_row, box=rt.box))
    steps = TurnSteps(
        model=BudgetedModel(model, turn.allowance) if turn.allowance else model,
        toolset=RunToolset(turn.tools, turn.scope) if turn.tools else None,
        prompt=turn.prompt,
        history=_history(turn.history),
        deferred=turn.deferred,
        instructions=turn.system_prompt or None,
        settings=_settings(rt, turn),
        max_steps=turn.max_steps,
    )
    outcome.run = steps
    async for event in steps.events():
        yield event


async def _stream_run(rt: Runtime, turn: PreparedTurn, stream: EngineEventStream,
                      collector: PartsCollector, outcome: _Outcome) -> None:
    buffers = rt.buffers
    key = turn.buffer_key
    first_text = True
    source = _agent_events(rt, turn, outcome)
    try:
        async for raw in stream.transform_stream(source):
            frame, chunk = wire.whole_frame(raw)
            collector.feed(chunk)
            if turn.on_chunk is not None:
                turn.on_chunk(chunk)
            if outcome.closing or isinstance(chunk, FinishChunk | DoneChunk):
                outcome.closing.append(frame)
                continue
            await buffers.append(key, frame)
            rt.checkpoints.touch(turn.message_id, collector)
            if first_text and isinstance(chunk, TextDeltaChunk):
                # Let the readers send the first text before this run reads on: a fast model has
                # the rest of its reply queued already, and decoding it would delay the first words.
                first_text = False
                rt.metrics.first_text(time.perf_counter() - turn.started)
                await asyncio.sleep(0)
    finally:
        await source.aclose()  # ends the run (and its model stream) when this loop ended first
        if outcome.run is not None:
            _capture(outcome.run, outcome)


def _history_json(messages: list[ModelMessage]) -> str:
    """The model history as saved; a lone surrogate in it becomes U+FFFD (``wire.whole_frame``)."""
    try:
        return ModelMessagesTypeAdapter.dump_json(messages).decode()
    except PydanticSerializationError:
        plain = whole_characters(ModelMessagesTypeAdapter.dump_python(messages, mode="json"))
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":"))


def _capture(steps: TurnSteps, outcome: _Outcome) -> None:
    if not steps.started:  # the run never started
        return
    outcome.messages = steps.messages
    outcome.tokens = usage_service.tokens_of(steps.usage)
    outcome.input_tokens, outcome.output_tokens = outcome.tokens.input, outcome.tokens.output
    outcome.model_calls = steps.usage.requests
    outcome.output = steps.output


def _deferred_calls(output: Any) -> list[str]:
    if not isinstance(output, DeferredToolRequests):
        return []
    return [c.tool_call_id for c in output.calls]


def _pending(output: Any) -> list[dict[str, Any]]:
    if not isinstance(output, DeferredToolRequests):
        return []
    return [{"toolCallId": c.tool_call_id, "toolName": c.tool_name, "input": c.args_as_dict()}
            for c in output.approvals]


async def drive(rt: Runtime, turn: PreparedTurn) -> TurnResult:
    """Run the prepared turn to its end, then save it. Re-raises a cancellation after saving, so a
    caller's own timeouts and cancellations keep working. With traces on, the turn is a ``chat turn``
    span: a child of the request that started it, even when it runs on after that request answered."""
    if not rt.tracing.enabled:
        return await _drive(rt, turn)
    with traced_turn(rt.tracing, session_id=turn.session_id, agent=turn.agent_slug, model=turn.model_row.model,
                     source=turn.usage_source, message_id=turn.message_id) as done:
        result = await _drive(rt, turn)
        done(result.status, failed=result.status == FAILED)
        return result


async def _drive(rt: Runtime, turn: PreparedTurn) -> TurnResult:
    stream = EngineEventStream(None, sdk_version=wire.SDK_VERSION, server_message_id=turn.message_id,
                               max_steps=turn.max_steps)
    collector = PartsCollector(turn.parts)
    outcome = _Outcome()
    runs = rt.runs
    rt.metrics.turn_started(turn.usage_source)
    runs.enter(turn.session_id)
    cancelled: BaseException | None = None
    try:
        await _stream_run(rt, turn, stream, collector, outcome)
    except asyncio.CancelledError as exc:
        cancelled = exc
        outcome.stopped = current_stop_reason(rt, turn.session_id)
        if not outcome.closing:
            outcome.closing = [wire.frame(chunk) for chunk in _ending(outcome.stopped)]
    except Exception as exc:  # a bug of ours, not a model failure (those end up in the stream)
        log.exception("chat run of session %s crashed", turn.session_id)
        _crashed(stream, collector, outcome, exc)
    finally:
        runs.leave(turn.session_id)
    try:
        await rt.checkpoints.settle(turn.message_id)
        result = await _finish(rt, turn, stream, collector, outcome)
        turn_log.ended(rt, turn, result, outcome.tokens, outcome.model_calls)
    finally:
        await runs.release(session_lease(turn.session_id))  # saved: nobody has to finish it now
    if cancelled is not None:
        if outcome.stopped != "stopped":
            raise cancelled
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()  # the user's stop is handled: the result says so
    # saved and released: a caller waiting for this turn may resume now
    await runs.turn_ended(turn.session_id, turn.buffer_key, result)
    return result


def _crashed(stream: EngineEventStream, collector: PartsCollector, outcome: _Outcome, exc: Exception) -> None:
    """End the stream of a run that failed outside the model's stream: an ``error`` chunk, then the
    closing chunks (those the stream produced already, else its own)."""
    stream.failure_text = stream.failure_text or f"The reply failed: {_internal(exc)}."
    failure, error = failure_chunk({"code": "failed"}), ErrorChunk(error_text=stream.failure_text)
    collector.feed(failure)
    collector.feed(error)
    closing = outcome.closing or [wire.frame(FinishChunk(finish_reason="error")), wire.DONE]
    outcome.closing = [wire.frame(failure), wire.frame(error), *closing]


_INTERRUPTED_NOTE = "The server shut down while this reply was being written."
_STOP_NOTES: dict[StopReason, str] = {
    "stopped": "Stopped by the user.",
    "cancelled": "The run was cancelled.",
}


def _ending(reason: StopReason) -> list[BaseChunk]:
    """The chunks that end a cancelled run's stream. A stop is an ``abort``; a shutdown's interruption is a
    failure of kind ``interrupted`` (``data-error``, then the ``error``), which the page words as it words
    an interrupted reply it loads, instead of showing it as stopped by the user."""
    if reason == "interrupted":
        return [failure_chunk({"code": "interrupted"}), ErrorChunk(error_text=_INTERRUPTED_NOTE),
                DoneChunk()]
    return [AbortChunk(reason=_STOP_NOTES[reason]), DoneChunk()]


def _status(stream: EngineEventStream, outcome: _Outcome, pending: list[dict[str, Any]],
            deferred: list[str]) -> TurnStatus:
    if outcome.stopped:
        return INTERRUPTED if outcome.stopped == "interrupted" else STOPPED
    if stream.failure_text:
        return FAILED
    if pending or deferred:
        return AWAITING_APPROVAL
    return COMPLETE


async def _finish(rt: Runtime, turn: PreparedTurn, stream: EngineEventStream,
                  collector: PartsCollector, outcome: _Outcome) -> TurnResult:
    """Save the turn, then send the closing chunks and close the buffer. A turn that cannot be saved is
    still ended: its message ``failed``, the session idle, an ``error`` chunk to the client."""
    buffers = rt.buffers
    result: TurnResult | None = None
    try:
        result, history = _result(turn, stream, collector, outcome)
        length = len(outcome.messages) if outcome.messages else None
        if stream.refusal is not None:  # stopped between model calls: on the trail with the stopped reply
            turn.scope.audit.append(_refusal_entry(turn.scope.user_id, stream.refusal, during="turn",
                                                   session_id=turn.session_id))
        await asyncio.shield(_save(rt, turn, collector, result, history, length, outcome.tokens))
    except Exception as exc:
        log.exception("could not save the turn of session %s", turn.session_id)
        reason = f"The reply could not be saved: {_internal(exc)}."
        result = TurnResult(status=FAILED, text="", message_id=turn.message_id, error=reason)
        outcome.closing = [wire.error_frame(reason), *outcome.closing]
        await asyncio.shield(_abandon(rt, turn, reason))
    finally:
        for frame in outcome.closing:
            await buffers.append(turn.buffer_key, frame)
        await buffers.close(turn.buffer_key, error=result.error if result else stream.failure_text)
    assert result is not None  # set on both ways out of ``try``; anything else raised
    return result


def _result(turn: PreparedTurn, stream: EngineEventStream, collector: PartsCollector,
            outcome: _Outcome) -> tuple[TurnResult, str | None]:
    """The turn's result and the model history to keep."""
    collector.close_open()
    pending, deferred = _pending(outcome.output), _deferred_calls(outcome.output)
    status = _status(stream, outcome, pending, deferred)
    result = TurnResult(
        status=status,
        text=collector.text,
        message_id=turn.message_id,
        input_tokens=turn.input_tokens + outcome.input_tokens,
        output_tokens=turn.output_tokens + outcome.output_tokens,
        error=_INTERRUPTED_NOTE if status == INTERRUPTED else stream.failure_text,
        pending=pending,
        deferred=deferred,
        refusal=stream.refusal,
    )
    history = _history_json(outcome.messages) if outcome.messages else None
    return result, history


async def _save(rt: Runtime, turn: PreparedTurn, collector: PartsCollector, result: TurnResult,
                history: str | None, history_length: int | None, tokens: usage_service.Tokens) -> None:
    """``history_length``: how many messages the saved history has (None: this turn saved none), kept on
    the reply so an edit or a regeneration can cut the history back to where a later turn started.
    ``tokens``: what this run used, recorded with the reply in the same transaction."""
    async with rt.db.session() as db:
        await _record_usage(db, turn, tokens)
        await service.update_message(
            db=db, message_id=turn.message_id, content=result.text, parts=collector.parts,
            status=result.status, error=result.error, input_tokens=result.input_tokens,
            output_tokens=result.output_tokens, history_length=history_length,
        )
        if result.pending:
            tool_ids = {t.name: t.id for t in turn.tools}  # which tool's approvers decide (``chat.approvals``)
            await service.add_approvals(db=db, session_id=turn.session_id, message_id=turn.message_id,
                                        calls=[{**c, "toolId": tool_ids.get(c["toolName"])} for c in result.pending])
        session_status = AWAITING_APPROVAL if result.status == AWAITING_APPROVAL else IDLE
        await service.set_session_state(db=db, session_id=turn.session_id, status=session_status, history=history)
        await _record_tool_calls(db, turn)


async def _record_tool_calls(db: AsyncSession, turn: PreparedTurn) -> None:
    """The run's ``tool.call`` events (and the ``budget.refused`` of a turn a budget stopped), last in the
    save's transaction (the audit chain's lock is held from here to the commit): no statement at all for a
    turn that called no tool, three for one that did."""
    if turn.scope.audit:
        await audit_service.record_many(db=db, entries=turn.scope.audit)


async def _record_usage(db: AsyncSession, turn: PreparedTurn, tokens: usage_service.Tokens) -> None:
    """The run's usage record, for the user the turn runs as (an A2A callee's turn runs as the user whose
    turn called it, or as the outside caller's user)."""
    s = turn.scope
    if s.user_id is None:  # every turn runs as a user; a scope without one has nobody to count for
        return
    await usage_service.record(db=db, user_id=s.user_id, source=turn.usage_source, tokens=tokens, model=turn.model_row,
                         agent_id=s.agent_id, session_id=turn.session_id)


# --- the public calls --------------------------------------------------------------------------------


async def run_turn(rt: Runtime, request: TurnRequest) -> TurnResult:
    return await drive(rt, await prepare_turn(rt, request))


async def resume_turn(
    rt: Runtime, *, session_id: str, user_id: int, user_role: str, buffer_key: str | None = None
) -> TurnResult:
    turn = await prepare_resume(rt, session_id=session_id, user_id=user_id, user_role=user_role,
                                buffer_key=buffer_key)
    return await drive(rt, turn)


__all__ = ["NoModel", "PreparedTurn", "TurnInputs", "TurnRequest", "TurnResult", "chat_inputs", "drive",
           "load_inputs", "prepare_resume", "prepare_rewind", "prepare_turn", "resume_turn", "run_turn"]
