"""Remote agents: agents that live elsewhere, called over A2A with a2a-sdk's client.

An admin registers one by its agent card URL and an optional bearer token; the card is fetched (and can be
fetched again) through the network guard and kept on the agent row. ``agent-invoke`` then calls it like a
local agent: the same checks, the same ``a2a_task_sessions`` row and callee session, the same
``data-a2a-task-started`` chunk and the same buffer ``a2a_<taskId>``, into which the remote task's answer
is written as UI-message-stream chunks while it arrives, so the side panel cannot tell the difference.
Every kind of part reads as text (``a2a.parts``): data, files and several artifacts included.
The callee session keeps the input sent and the remote reply as ``source='a2a'`` messages.

The client streams (``SendStreamingMessage``) when the card says the agent can, and sends one
``SendMessage`` otherwise. One token per remote agent: the remote side sees a single caller for every
local user, which the admin page says. Every failure (card unreachable, auth refused, a task that failed
or wants input, a time limit, a stream that broke) ends the task as failed with the reason, in the panel
and in the tool result; the remote task is cancelled when the call is given up. A call that fails before
the agent said anything fetches its card again: when the card changed (the agent moved its endpoint), the
new card is kept and the call made once more on it.

What a remote agent sends is bounded, since it lands in the panel's buffer, the callee session and the
calling model's context: each event (or a whole answer, when the agent does not stream) at most
``MAX_EVENT_BYTES``, checked by the transport as the bytes arrive (a2a-sdk's client would hold a line and
an event whole, then parse it), and the reply's text at most ``AGENTLOFT_REMOTE_AGENT_MAX_CHARS``. Past
either, the call ends as failed with an error that says which limit, the text kept is the first that many
characters, and the remote task is cancelled and its stream closed. Reasons the agent gives (a failed
task's status message, an error) are cut to ``MAX_REASON_CHARS``.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import httpx
from a2a.client import ClientConfig, create_client
from a2a.client.card_resolver import parse_agent_card
from a2a.client.client import Client as A2AClient
from a2a.types import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    TaskState,
)
from a2a.utils.constants import TransportProtocol
from google.protobuf.json_format import MessageToDict, ParseError
from pydantic_ai.ui.vercel_ai.response_types import (
    BaseChunk,
    DataChunk,
    DoneChunk,
    ErrorChunk,
    FinishChunk,
    FinishStepChunk,
    StartChunk,
    StartStepChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
)

from agentloft.a2a import tasks
from agentloft.a2a.models import A2ATaskSession
from agentloft.a2a.parts import Joiner, render
from agentloft.a2a.tasks import TaskOutcome, buffer_key
from agentloft.agents import service as agents_service
from agentloft.agents.models import Agent
from agentloft.chat import service as chat_service
from agentloft.chat import wire
from agentloft.chat.models import COMPLETE, FAILED, IDLE
from agentloft.core import netguard
from agentloft.core.runtime import Runtime
from agentloft.core.tracing import traced_request
from agentloft.system import service as system_service

log = logging.getLogger(__name__)

BINDINGS = (TransportProtocol.JSONRPC, TransportProtocol.HTTP_JSON)  # gRPC needs a2a-sdk[grpc]
CARD_MAX_BYTES = 1_000_000
# 1 MiB, the MCP SDK's default for one event: room for any reply within the text limit, the task's
# history (the input of at most 100,000 characters) and some data parts. An MCP server may send more
# (images reach the model as images); a remote agent's files are named, never shown.
MAX_EVENT_BYTES = netguard.STREAM_MAX_EVENT_BYTES
MAX_REASON_CHARS = 2_000  # an error or a status message is a sentence or a paragraph, not an answer
# Why a remote task that stopped to wait (``tasks.WAITING``) ends the call: an agent-invoke call cannot
# give what it waits for.
WAITING_REASONS: dict[int, str] = {TaskState.TASK_STATE_INPUT_REQUIRED: "the remote agent asks for more input",
                                   TaskState.TASK_STATE_AUTH_REQUIRED: "the remote agent asks for authorization"}


class RemoteError(Exception):
    """A remote call that cannot go on; the message is the reason shown in the panel and the result."""


def clip(text: str, limit: int = MAX_REASON_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying so when it was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters left out)"


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


# ---------------------------------------------------------------- the card


async def fetch_card(rt: Runtime, card_url: str, token: str | None) -> tuple[dict[str, Any] | None, str | None]:
    """The agent card at ``card_url`` as JSON, or None and the reason (never raises)."""
    try:
        response = await netguard.request(
            "GET", card_url, allow=await system_service.internal_allow_list(rt=rt), headers=_headers(token),
            max_bytes=CARD_MAX_BYTES,
        )
    except netguard.NetError as exc:
        return None, f"the agent card could not be fetched: {exc}"
    if not response.ok:
        return None, f"the agent card could not be fetched: HTTP {response.status_code}"
    try:
        data = response.json_body()
        card = parse_agent_card(data)
    except RecursionError:  # JSON nested deeper than the json module parses
        return None, "the agent card is not valid: its JSON is nested too deeply"
    except (ValueError, ParseError) as exc:
        return None, f"the agent card is not valid: {clip(str(exc))}"
    if not card.supported_interfaces:
        return None, "the agent card names no interface to call"
    if not await _callable(card):
        offered = ", ".join(f"{i.protocol_binding} {i.protocol_version}".strip() for i in card.supported_interfaces)
        return None, f"the agent card offers no interface this server can call (it offers: {offered})"
    return MessageToDict(card), None


def _client_config(card: AgentCard, http: httpx.AsyncClient) -> ClientConfig:
    """The client for ``card``: streaming when the agent can, over JSON-RPC or HTTP+JSON (the SDK's
    default is JSON-RPC alone, and some agents offer only HTTP+JSON), in the agent's order of preference."""
    return ClientConfig(streaming=bool(card.capabilities.streaming), httpx_client=http,
                        supported_protocol_bindings=list(BINDINGS))


async def _callable(card: AgentCard) -> bool:
    """Whether the SDK's client can be built for ``card`` (one of its interfaces is one we speak)."""
    async with httpx.AsyncClient() as http:
        try:
            await create_client(card, client_config=_client_config(card, http))
        except ValueError:
            return False
    return True


def card_of(agent: Agent) -> AgentCard:
    if not agent.card:
        raise RemoteError(agent.card_error or f"agent '{agent.slug}' has no agent card yet (refresh it)")
    try:
        return parse_agent_card(dict(agent.card))
    except (ValueError, ParseError) as exc:
        raise RemoteError(f"the stored agent card of '{agent.slug}' is not valid: {exc}") from exc


# ---------------------------------------------------------------- the panel's stream


@dataclass
class _Panel:
    """Writes the remote reply into the task's buffer as UI-message-stream chunks, as the engine would,
    and keeps at most ``max_chars`` of it: the text past that is refused (``add`` raises)."""

    rt: Runtime
    key: str
    message_id: str
    max_chars: int
    text_open: bool = False
    parts: list[str] = field(default_factory=list)
    kept: int = 0

    async def put(self, chunk: BaseChunk) -> None:
        await self.rt.buffers.append(self.key, wire.frame(chunk))

    async def start(self) -> None:
        await self.put(StartChunk(message_id=self.message_id))
        await self.put(StartStepChunk())

    async def text(self, delta: str) -> None:
        """Add ``delta`` to the reply; past ``max_chars``, add what fits and raise :class:`RemoteError`."""
        room = self.max_chars - self.kept
        if delta[room:]:
            await self._add(delta[:room])
            raise RemoteError(f"the remote agent's answer is longer than {self.max_chars:,} characters, the "
                              "most a remote agent may give (AGENTLOFT_REMOTE_AGENT_MAX_CHARS); the call was "
                              f"stopped, and the first {self.max_chars:,} characters kept")
        await self._add(delta)

    async def _add(self, delta: str) -> None:
        if not delta:
            return
        if not self.text_open:
            await self.put(TextStartChunk(id="reply"))
            self.text_open = True
        self.parts.append(delta)
        self.kept += len(delta)
        await self.put(TextDeltaChunk(id="reply", delta=delta))

    async def end(self, error: str | None) -> None:
        if self.text_open:
            await self.put(TextEndChunk(id="reply"))
        if error:
            await self.put(ErrorChunk(error_text=error))
        await self.put(FinishStepChunk())
        await self.put(FinishChunk(finish_reason="error" if error else "stop"))
        await self.put(DoneChunk())

    @property
    def reply(self) -> str:
        return "".join(self.parts)


# ---------------------------------------------------------------- reading the remote task


@dataclass
class _Progress:
    """What the remote side said so far."""

    remote_task_id: str | None = None
    context_id: str | None = None
    state: int = TaskState.TASK_STATE_SUBMITTED
    status_text: str = ""
    streamed: bool = False  # artifact text arrived (the reply streamed)
    heard: bool = False  # the agent answered anything at all
    artifact_id: str | None = None  # the artifact the last piece belonged to
    joiner: Joiner = field(default_factory=Joiner)


async def _artifact(progress: _Progress, panel: _Panel, artifact: Artifact) -> None:
    """One artifact, or the next piece of one: a new artifact is set apart from the one before."""
    if artifact.artifact_id != progress.artifact_id:
        progress.joiner.next_artifact()
        progress.artifact_id = artifact.artifact_id
    text = progress.joiner.add(artifact.parts)
    progress.streamed = progress.streamed or bool(text)
    await panel.text(text)


async def _absorb(event: StreamResponse, progress: _Progress, panel: _Panel) -> None:
    progress.heard = True
    kind = event.WhichOneof("payload")
    if kind == "task":
        task = event.task
        progress.remote_task_id = task.id
        progress.context_id = task.context_id or progress.context_id
        progress.state = task.status.state
        progress.status_text = render(task.status.message.parts)
        if not progress.streamed:
            for artifact in task.artifacts:
                await _artifact(progress, panel, artifact)
    elif kind == "status_update":
        progress.remote_task_id = event.status_update.task_id or progress.remote_task_id
        progress.context_id = event.status_update.context_id or progress.context_id
        progress.state = event.status_update.status.state
        progress.status_text = render(event.status_update.status.message.parts)
    elif kind == "artifact_update":
        progress.remote_task_id = event.artifact_update.task_id or progress.remote_task_id
        await _artifact(progress, panel, event.artifact_update.artifact)
    elif kind == "message":  # a direct reply, no task
        progress.state = TaskState.TASK_STATE_COMPLETED
        progress.status_text = render(event.message.parts)


async def _events(client: A2AClient, text: str,
                  continuation: tuple[str, str] | None = None) -> AsyncGenerator[StreamResponse, None]:
    """The remote task's events; closing this closes the SDK's stream (and its connection) at once.
    ``continuation``: the (task id, context id) of a remote task that asked for input, which this
    message answers."""
    message = Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)])
    if continuation is not None:
        message.task_id, message.context_id = continuation
    events = client.send_message(SendMessageRequest(message=message))  # an async generator in a2a-sdk 1.3
    try:
        async for event in events:
            yield event
    finally:
        if isinstance(events, AsyncGenerator):
            await events.aclose()


async def _cancel_remote(client: A2AClient, progress: _Progress) -> None:
    if progress.remote_task_id is None or progress.state in tasks.TERMINAL:
        return
    try:
        async with asyncio.timeout(5):
            await client.cancel_task(CancelTaskRequest(id=progress.remote_task_id))
    except Exception as exc:  # best effort: the call is over either way
        log.info("cancelling remote task %s failed: %s", progress.remote_task_id, exc)


def _outcome(task_id: str, progress: _Progress, panel: _Panel, pause: bool = False) -> TaskOutcome:
    """How the call ended once the remote side stopped talking. A completed task's reply went through
    the panel (and its limit) before this is asked. ``pause``: a task that asks for input waits for the
    calling user's answer (``a2a.waiting``) instead of failing the call."""
    state = progress.state
    status = clip(progress.status_text)
    if state == TaskState.TASK_STATE_COMPLETED:
        return TaskOutcome(task_id=task_id, state=tasks.COMPLETED, text=panel.reply)
    if pause and state == TaskState.TASK_STATE_INPUT_REQUIRED and progress.remote_task_id:
        return TaskOutcome(task_id=task_id, state=tasks.INPUT_REQUIRED, text=panel.reply,
                           error=status or WAITING_REASONS[state])
    if state in tasks.WAITING:
        return _failed(task_id, panel, WAITING_REASONS[state] + (f": {status}" if status else ""))
    if state in tasks.TERMINAL:
        reason = status or f"the remote task ended {tasks.state_name(state)}"
        if state == TaskState.TASK_STATE_CANCELED:
            return TaskOutcome(task_id=task_id, state=tasks.CANCELED, text=panel.reply, error=reason)
        return _failed(task_id, panel, reason)
    return _failed(task_id, panel, "the remote agent's stream ended before its task did")


def _failed(task_id: str, panel: _Panel, error: str) -> TaskOutcome:
    return TaskOutcome(task_id=task_id, state=tasks.FAILED, text=panel.reply, error=error)


def describe(exc: BaseException) -> str:
    """Why the call failed, in words for the panel and the calling model."""
    if isinstance(exc, RemoteError):
        return str(exc)
    if isinstance(exc, netguard.TooLarge):
        return f"the remote agent sent too much at once: {exc}"
    if isinstance(exc, RecursionError):  # an event whose JSON the json module cannot parse
        return "the remote agent sent JSON nested too deeply to read"
    text = clip(str(exc).strip() or type(exc).__name__)
    if "401" in text or "403" in text:
        return f"the remote agent refused the call ({text})"
    return text


# ---------------------------------------------------------------- running one call


@dataclass
class RemoteCall:
    rt: Runtime
    task: A2ATaskSession
    callee: Agent
    input_text: str
    extra: dict[str, Any]
    timeout_s: float | None
    pause: bool = False  # a task that asks for input waits for the calling user (``_outcome``)
    continuation: tuple[str, str] | None = None  # the remote task this call answers (``_events``)


async def open_call(call: RemoteCall) -> _Panel:
    """Claim the callee session, store the input and an empty reply, open the panel's buffer. A step of
    its own (``run_call`` is the rest): an answer to a task that asked for input opens the panel's new run
    before the answer's request returns, so a panel that follows at once follows the new run, never the
    one that asked (``a2a.waiting.answer_remote``)."""
    async with call.rt.db.session() as db:
        reply_id, *_ = await chat_service.begin_turn(db=db, session_id=call.task.session_id or "",
                                                    user_id=call.task.user_id, agent_id=call.callee.id,
                                                    user_text=call.input_text, model_id=None, extra=call.extra)
    key = buffer_key(call.task.id)
    await call.rt.buffers.open(key, {"sessionId": call.task.session_id, "messageId": reply_id})
    panel = _Panel(call.rt, key, reply_id, max_chars=call.rt.settings.remote_agent_max_chars)
    await panel.start()
    return panel


async def _close(call: RemoteCall, panel: _Panel, outcome: TaskOutcome, progress: _Progress) -> None:
    """End the panel's stream and save the reply and the task's state. A task that asks for input tells
    the panel its question (``data-a2a-input-required``) and keeps the remote task's ids to answer it."""
    state, text, error = outcome.state, outcome.text, outcome.error
    remote_task_id = progress.remote_task_id
    completed, asks = state == tasks.COMPLETED, state == tasks.INPUT_REQUIRED
    if asks:
        await panel.put(DataChunk(type="data-a2a-input-required", data={"question": error or ""}))
    await panel.end(None if completed or asks else error)
    content = (f"{text}\n\n{error}" if text else error or "") if asks else text
    async with call.rt.db.session() as db:
        await chat_service.update_message(
            db=db, message_id=panel.message_id, content=content,
            parts=[{"type": "text", "text": content}] if content else [],
            status=COMPLETE if completed or asks else FAILED, error=None if asks else error,
        )
        await chat_service.set_session_state(db=db, session_id=call.task.session_id or "", status=IDLE)
        row = await db.get(A2ATaskSession, call.task.id)
        if row is not None:
            row.state = state
            kept = {k: v for k, v in (row.caller_context or {}).items() if k != "question"}
            row.caller_context = {**kept, "remote": True,
                                  **({"remoteTaskId": remote_task_id} if remote_task_id else {}),
                                  **({"remoteContextId": progress.context_id} if progress.context_id else {}),
                                  # asked again by a panel opened once the stream is gone (``a2a.router``)
                                  **({"question": error or ""} if asks else {})}
    await call.rt.buffers.close(panel.key, error=None if asks else error)


async def _converse(call: RemoteCall, panel: _Panel, progress: _Progress, card: AgentCard) -> None:
    token = agents_service.remote_token(row=call.callee, box=call.rt.box)
    allow = await system_service.internal_allow_list(rt=call.rt)
    async with netguard.guarded_client(allow, headers=_headers(token), max_body_bytes=MAX_EVENT_BYTES,
                                       max_event_bytes=MAX_EVENT_BYTES) as http:
        http.event_hooks["request"].append(traced_request)  # the callee continues this turn's trace
        client = await create_client(card, client_config=_client_config(card, http))
        try:
            async with aclosing(_events(client, call.input_text, call.continuation)) as events:
                async for event in events:
                    await _absorb(event, progress, panel)
                    if progress.state in tasks.ENDING:
                        break
        except BaseException:
            await asyncio.shield(_cancel_remote(client, progress))
            raise


async def _newer_card(call: RemoteCall, card: AgentCard) -> AgentCard | None:
    """The agent's card fetched again, stored and returned when it differs from ``card``; else None."""
    callee = call.callee
    token = agents_service.remote_token(row=callee, box=call.rt.box)
    data, error = await fetch_card(call.rt, callee.card_url or "", token)
    if data is None or parse_agent_card(dict(data)) == card:
        return None

    async def fetched(url: str, token: str | None) -> tuple[dict[str, Any] | None, str | None]:
        return data, error

    async with call.rt.db.session() as db:
        await agents_service.store_card(db=db, agent_id=callee.id, box=call.rt.box, fetch_card=fetched)
    log.info("remote agent %s: its card changed; calling it again as the new card says", callee.slug)
    return parse_agent_card(dict(data))


async def _converse_or_reload(call: RemoteCall, panel: _Panel, progress: _Progress) -> None:
    """Talk to the agent as its stored card says. When that fails before the agent said anything (its
    endpoint moved, its binding changed) and its card now says otherwise, keep the new card and try once
    more; an agent that is simply down is not asked twice."""
    card = card_of(call.callee)
    try:
        await _converse(call, panel, progress, card)
    except Exception as first:
        if progress.heard or isinstance(first, RemoteError):
            raise
        fresh = await _newer_card(call, card)
        if fresh is None:
            raise
        await _converse(call, panel, progress, fresh)


async def run_remote_task(
    *, rt: Runtime, task: A2ATaskSession, callee: Agent, input_text: str, extra: dict[str, Any],
    timeout_s: float | None, pause: bool = False, continuation: tuple[str, str] | None = None,
) -> TaskOutcome:
    """Run one call to a remote agent into the task's buffer; returns how it ended (no token counts: the
    remote side's tokens are not ours to count). ``pause`` and ``continuation``: see ``RemoteCall``."""
    call = RemoteCall(rt, task, callee, input_text, extra, timeout_s, pause, continuation)
    return await run_call(call, await open_call(call))


async def run_call(call: RemoteCall, panel: _Panel) -> TaskOutcome:
    """The rest of ``run_remote_task`` once ``open_call`` opened the panel."""
    rt, task, callee, timeout_s, pause = call.rt, call.task, call.callee, call.timeout_s, call.pause
    progress = _Progress()
    async with rt.db.session() as db:
        row = await db.get(A2ATaskSession, task.id)
        if row is not None:
            row.state = tasks.WORKING
    try:
        async with asyncio.timeout(timeout_s):
            await _converse_or_reload(call, panel, progress)
        if progress.state == TaskState.TASK_STATE_COMPLETED and not panel.reply:
            await panel.text(progress.status_text)  # the reply came whole, in the final status
        outcome = _outcome(task.id, progress, panel, pause)
    except TimeoutError:
        outcome = _failed(task.id, panel, f"agent '{callee.slug}' did not answer within {timeout_s:g} s")
    except asyncio.CancelledError:
        canceled = TaskOutcome(task_id=task.id, state=tasks.CANCELED, text=panel.reply, error="the call was canceled")
        await asyncio.shield(_close(call, panel, canceled, progress))
        raise
    except Exception as exc:
        outcome = _failed(task.id, panel, describe(exc))
        log.info("remote agent %s failed (%s): %s", callee.slug, type(exc).__name__, outcome.error)
    await _close(call, panel, outcome, progress)
    return outcome
