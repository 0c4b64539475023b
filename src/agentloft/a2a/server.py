"""The public A2A 1.0 server: every enabled, A2A-callable agent answers JSON-RPC at ``/a2a/{slug}/``.

Pieces (a2a-sdk 1.3):
- ``AgentloftExecutor`` runs a task through the same ``a2a.service`` as the agent-invoke tool (same
  engine, same ``source='a2a'`` messages, same buffer ``a2a_<taskId>``) and relays the reply's text
  to the A2A client as artifact chunks, at most one every ``RELAY_PACE_S`` (what arrives in between
  goes out as one chunk). It takes the text from the engine's chunks as the run makes them
  (``chat.relay``), not from the buffer's encoded frames: the run is always this worker's own.
- ``RowTaskStore`` keeps the protocol's ``Task`` on our ``a2a_task_sessions`` row (``task_data``), scoped
  by owner (our user id) and agent, so ``GetTask`` survives restarts and works from any worker. It is a
  versioned store (``task_version``, compare-and-set on every save), which is what lets the SDK serve
  ``CancelTask`` and ``SubscribeToTask`` for a task that another worker runs.
- ``BufferTaskEventStream`` carries the task's events between workers through our stream buffers (key
  ``a2a_events_<taskId>``; in memory, or a Redis stream when several workers share one): a
  ``SubscribeToTask`` on a worker that does not run the task gets the stored snapshot, then the events
  after it. A ``CancelTask`` there records the cancel (the SDK's cross-replica path) and our store asks
  the owner of the run to stop it at once (``RunRegistry.stop_anywhere``), instead of at its next save.
- ``A2AServers`` builds one ``DefaultRequestHandler`` per agent on first use and caches it by agent id
  (agents are created and changed at run time; nothing is mounted at start-up). The handler's
  in-memory registry of the tasks this worker runs is kept across agent edits; only its card is
  refreshed, in place (``CopyFrom``) on the one card object per agent that the handler was built with.
Auth is our personal API token (bearer); the router resolves the user before the SDK sees the request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncGenerator
from typing import Any

from a2a.auth.user import User as A2AUserBase
from a2a.server.agent_execution import AgentExecutor, RequestContext, SimpleRequestContextBuilder
from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    HTTPAuthSecurityScheme,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    SecurityRequirement,
    SecurityScheme,
    SendMessageRequest,
    StreamResponse,
    StringList,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError
from a2a.utils.proto_utils import to_stream_response
from google.protobuf.json_format import MessageToDict, ParseDict
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from agentloft import __version__
from agentloft.a2a import service, tasks
from agentloft.a2a.models import A2ATaskSession
from agentloft.agents.models import Agent
from agentloft.chat.leases import task_lease
from agentloft.chat.relay import TextRelay
from agentloft.core.db import UNSTORABLE, rows_matched
from agentloft.core.runtime import Runtime
from agentloft.groups import access

log = logging.getLogger(__name__)

CARD_PATH = ".well-known/agent-card.json"
# Every artifact chunk costs the SDK a task save and the client an SSE event: one per model delta could
# not keep a fast model's pace, and a slow reader would fall over a thousand events behind (the SDK then
# drops it). So the relay sends at most this often, with whatever arrived since, as one chunk.
RELAY_PACE_S = 0.05


class A2AUser(A2AUserBase):
    """Our signed-in user as the SDK sees it. ``user_name`` is the owner key of tasks: the user id, which
    unlike a username never changes hands."""

    def __init__(self, user_id: int, username: str, role: str, group_ids: frozenset[int] = frozenset()) -> None:
        self.user_id = user_id
        self.username = username
        self.role = role
        self.group_ids = group_ids  # read once per request (``groups.access.viewer_of``)

    @property
    def viewer(self) -> access.Viewer:
        return access.Viewer(role=self.role, group_ids=self.group_ids)

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return str(self.user_id)


class ContextBuilder(DefaultServerCallContextBuilder):
    """Takes the user the router already resolved from the bearer token (``request.state.a2a_user``)."""

    def build_user(self, request: Request) -> A2AUserBase:
        return request.state.a2a_user


def _owner(context: ServerCallContext) -> int | None:
    user = context.user
    return user.user_id if isinstance(user, A2AUser) else None


_CANCEL_TRIES = 20  # a cancel retried this often against a running task's saves before it gives up


def version_number(version: TaskVersion) -> int:
    """The counter inside a ``TaskVersion`` of ours. The SDK keeps the value private but hashes a version
    as its value, and a small int hashes as itself (tests/a2a/test_server_cluster.py holds it to that)."""
    return hash(version)


def _stored_state(data: dict[str, Any] | None) -> int | None:
    name = ((data or {}).get("status") or {}).get("state")
    try:
        return TaskState.Value(str(name))
    except ValueError:
        return None


def _plain_text(part: Part) -> bool:
    return part.WhichOneof("content") == "text" and not part.HasField("metadata") and not part.filename


def compact_artifacts(task: Task) -> None:
    """Join each artifact's runs of plain text parts into one part, in place, and drop empty ones.

    Why: the reply streams as artifact chunks appended to one artifact, and the SDK appends every chunk's
    part, so a finished task held one part per chunk (one per model delta for a slow model) and the empty
    part of the last chunk; a client that reads the first part got the first word. The stream itself is
    unchanged. In place, because the SDK keeps the task it saves as the one it answers with (a blocking
    SendMessage, the first event of SubscribeToTask): a2a-sdk 1.3.0's ``TaskManager`` does, and
    tests/a2a/test_server_sdk.py fails if it stops doing so."""
    for artifact in task.artifacts:
        parts = list(artifact.parts)
        joined: list[Part] = []
        for part in parts:
            if _plain_text(part) and not part.text:
                continue
            if joined and _plain_text(part) and _plain_text(joined[-1]) \
                    and part.media_type == joined[-1].media_type:
                joined[-1] = Part(text=joined[-1].text + part.text, media_type=part.media_type)
                continue
            joined.append(part)
        if len(joined) != len(parts):
            del artifact.parts[:]
            artifact.parts.extend(joined or [Part(text="")])


class RowTaskStore(VersionedTaskStore):
    """Tasks of one agent, kept as protocol JSON on ``a2a_task_sessions``; every read filters by owner, and
    every save compares and bumps ``task_version`` (a cancel wins over a running task, as the SDK asks)."""

    def __init__(self, rt: Runtime, agent_id: int) -> None:
        self.rt = rt
        self.agent_id = agent_id

    async def save(self, task: Task, *, event: Any, prev: Task | None, prev_version: TaskVersion,
                   context: ServerCallContext) -> TaskVersion:
        owner = _owner(context)
        if owner is None:
            return TaskVersion.MISSING
        compact_artifacts(task)
        data = MessageToDict(task)
        async with self.rt.db.session() as db:
            row = await db.get(A2ATaskSession, task.id)
            if row is None:
                if not prev_version.is_missing:
                    raise ConcurrentTaskModificationError(task.id)
                db.add(A2ATaskSession(id=task.id, agent_id=self.agent_id, user_id=owner, task_data=data,
                                      state=tasks.state_name(task.status.state), caller_context={"via": "a2a"},
                                      task_version=1))
                return TaskVersion(1)
            if row.user_id != owner:
                raise ConcurrentTaskModificationError(task.id)
            cancel = task.status.state == TaskState.TASK_STATE_CANCELED
            self._check(task.id, row, prev_version, cancel)
            session_id = row.session_id
            if cancel:
                version = await self._write_cancel(db, row, data)
            else:
                stmt = (
                    update(A2ATaskSession)
                    .where(A2ATaskSession.id == task.id, A2ATaskSession.task_version == row.task_version)
                    .values(task_data=data, state=tasks.state_name(task.status.state),
                            task_version=row.task_version + 1)
                )
                if await rows_matched(db, stmt) != 1:
                    raise ConcurrentTaskModificationError(task.id)
                version = row.task_version + 1
        if cancel and session_id:
            await self._stop_elsewhere(task.id, session_id)
        return TaskVersion(version)

    @staticmethod
    def _check(task_id: str, row: A2ATaskSession, prev_version: TaskVersion, cancel: bool) -> None:
        """A cancel overwrites any task still going; every other save must start from the stored version."""
        if cancel:
            if row.task_data is None or _stored_state(row.task_data) in tasks.TERMINAL:
                raise ConcurrentTaskModificationError(task_id)
        elif TaskVersion(row.task_version) != prev_version:
            raise ConcurrentTaskModificationError(task_id)

    @classmethod
    async def _write_cancel(cls, db: AsyncSession, row: A2ATaskSession, data: dict[str, Any]) -> int:
        """A cancel wins over the saves of a task still going: when the running worker saved in between
        (its next artifact chunk), look again and retry, instead of failing the compare as any other save
        would; the SDK would answer "cannot be canceled" for a task that is running. Refused only when
        the task ended meanwhile (the SDK reloads it and says so)."""
        for _ in range(_CANCEL_TRIES):
            stmt = (
                update(A2ATaskSession)
                .where(A2ATaskSession.id == row.id, A2ATaskSession.task_version == row.task_version)
                .values(task_data=data, state=tasks.CANCELED, task_version=row.task_version + 1)
            )
            if await rows_matched(db, stmt) == 1:
                return row.task_version + 1
            await db.refresh(row)
            cls._check(row.id, row, TaskVersion(row.task_version), cancel=True)
        raise ConcurrentTaskModificationError(row.id)

    async def _stop_elsewhere(self, task_id: str, session_id: str) -> None:
        """A cancel recorded here for a task another worker runs: have that worker stop the run now."""
        runs = self.rt.runs
        holder = await runs.leases.owner(task_lease(task_id))
        if holder is not None and holder != runs.leases.worker_id:
            await runs.stop_anywhere(session_id)

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        row = await self._row(task_id, context)
        if row is None or row.task_data is None:
            return None
        return StoredTask(ParseDict(row.task_data, Task(), ignore_unknown_fields=True), TaskVersion(row.task_version))

    async def _row(self, task_id: str, context: ServerCallContext) -> A2ATaskSession | None:
        owner = _owner(context)
        if owner is None:
            return None
        stmt = select(A2ATaskSession).where(
            A2ATaskSession.id == task_id, A2ATaskSession.user_id == owner,
            A2ATaskSession.agent_id == self.agent_id, A2ATaskSession.task_data.is_not(None),
        )
        async with self.rt.db.session() as db:
            return (await db.execute(stmt)).scalar_one_or_none()

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        owner = _owner(context)
        if owner is None:
            return ListTasksResponse()
        size = params.page_size or 50
        stmt = (
            select(A2ATaskSession)
            .where(A2ATaskSession.user_id == owner, A2ATaskSession.agent_id == self.agent_id,
                   A2ATaskSession.task_data.is_not(None))
            .order_by(A2ATaskSession.created_at.desc())
            .limit(size)
        )
        if params.context_id:
            stmt = stmt.where(A2ATaskSession.caller_context["contextId"].as_string() == params.context_id)
        async with self.rt.db.session() as db:
            rows = list((await db.execute(stmt)).scalars())
        tasks = [ParseDict(r.task_data, Task(), ignore_unknown_fields=True) for r in rows if r.task_data is not None]
        return ListTasksResponse(tasks=tasks, page_size=size, total_size=len(tasks))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        row = await self._row(task_id, context)
        if row is not None:
            async with self.rt.db.session() as db:
                stored = await db.get(A2ATaskSession, task_id)
                if stored is not None:
                    stored.task_data = None


def _event_of(response: StreamResponse) -> Message | Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent:
    which = response.WhichOneof("payload")
    if which == "task":
        return response.task
    if which == "message":
        return response.message
    if which == "status_update":
        return response.status_update
    return response.artifact_update


def _ends_stream(event: Any) -> bool:
    """The events after which a task's stream has nothing more to say (the SDK's own rule)."""
    if isinstance(event, Message):
        return True
    return isinstance(event, Task | TaskStatusUpdateEvent) and event.status.state in tasks.ENDING


class BufferTaskEventStream(TaskEventStream):
    """A task's events, one JSON line each (version and ``StreamResponse``), in the stream buffer
    ``a2a_events_<taskId>``. The worker running the task opens it (``AgentloftExecutor``); the event that
    ends the task ends the buffer. Any worker can follow it."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        line = json.dumps({"v": version_number(event.version), "e": MessageToDict(to_stream_response(event.event))})
        key = tasks.events_key(task_id)
        await self.rt.buffers.append(key, line + "\n")
        if _ends_stream(event.event):
            await self.rt.buffers.close(key)

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent, None]:
        async for frames in self.rt.buffers.subscribe(tasks.events_key(task_id)):
            for line in frames.splitlines():
                if not line:
                    continue
                item = json.loads(line)
                version = TaskVersion(int(item["v"]))
                if version.is_after(after):
                    yield VersionedEvent(event=_event_of(ParseDict(item["e"], StreamResponse())), version=version)

    async def destroy(self, task_id: str) -> None:
        return None  # the buffer ends with the task's last event and expires after the grace period


class CheckedContextBuilder(SimpleRequestContextBuilder):
    """The SDK's request context, built only for a message whose text a database can store: U+0000 or
    half a UTF-16 surrogate pair is refused as invalid params before any task exists. The client can
    fix what it sends; PostgreSQL refused such text in a task's history where SQLite kept it."""

    async def build(self, context: ServerCallContext, params: SendMessageRequest | None = None,
                    task_id: str | None = None, context_id: str | None = None, task: Task | None = None
                    ) -> RequestContext:
        if params is not None and any(UNSTORABLE.search(part.text) for part in params.message.parts):
            raise InvalidParamsError(message="the message's text may not contain the NUL character (\\u0000) "
                                             "or a lone surrogate (\\ud800-\\udfff)")
        return await super().build(context, params, task_id, context_id, task)


class AgentloftExecutor(AgentExecutor):
    """Runs one A2A request as a task of our service, streaming the reply as one text artifact."""

    def __init__(self, rt: Runtime, agent_id: int) -> None:
        self.rt = rt
        self.agent_id = agent_id

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Run the task while holding its lease: another worker finishes it if this one dies."""
        task_id = context.task_id or service.new_task_id()
        async with self.rt.runs.lease(task_lease(task_id)):
            await self._execute(context, event_queue, task_id)

    async def _execute(self, context: RequestContext, event_queue: EventQueue, task_id: str) -> None:
        user = context.call_context.user
        assert isinstance(user, A2AUser)  # the router refuses anonymous calls
        context_id = context.context_id or ""
        updater = TaskUpdater(event_queue, task_id, context_id)
        text = context.get_user_input()
        async with self.rt.db.session() as db:
            callee = await db.get(Agent, self.agent_id)
        if callee is None:  # deleted since the request was routed; the SDK fails the task
            raise TaskNotFoundError(message="this agent no longer exists")
        caller = service.Caller(user_id=user.user_id, user_role=user.role, group_ids=user.group_ids,
                                context={"via": "a2a", "contextId": context_id})
        if context.current_task is None:
            # Our row first, then the protocol's Task: the task store keeps the Task on that row.
            await service.create_task(rt=self.rt, callee=callee, caller=caller, task_id=task_id)
            await self.rt.buffers.open(tasks.events_key(task_id), {"taskId": task_id})
            history = [context.message] if context.message else []
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, history=history,
                                                 status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        await updater.start_work()
        if not text.strip():
            await updater.failed(self._message(updater, "the message has no text"))
            return
        async with self.rt.db.session() as db:
            row = await service.get_task_row(db=db, task_id=task_id, user_id=user.user_id)
        reply = TextRelay()
        run = asyncio.create_task(
            service.run_task(rt=self.rt, task=row, callee=callee, caller=caller, input_text=text, on_chunk=reply)
        )
        run.add_done_callback(lambda _: reply.end())
        relay = asyncio.create_task(self._relay(reply, updater, run))
        try:
            outcome = await run
        except BaseException:
            relay.cancel()
            run.cancel()
            raise
        await asyncio.wait({relay}, timeout=5)
        relay.cancel()
        if outcome.state == tasks.COMPLETED:
            await updater.add_artifact([Part(text="")], artifact_id="reply", name="reply", append=True,
                                       last_chunk=True)
            await updater.complete(self._message(updater, outcome.text))
        elif outcome.state == tasks.CANCELED:  # stopped on request (a CancelTask that reached this worker)
            await updater.cancel(self._message(updater, outcome.error or "the task was canceled"))
        else:
            await updater.failed(self._message(updater, outcome.error or outcome.state))

    @staticmethod
    def _message(updater: TaskUpdater, text: str) -> Message:
        return updater.new_agent_message([Part(text=text)])

    @staticmethod
    async def _relay(reply: TextRelay, updater: TaskUpdater, run: asyncio.Task[Any]) -> None:
        """Forward the reply's text as artifact chunks as the engine makes it, one chunk per
        ``RELAY_PACE_S`` at most (each with all the text that arrived since the one before)."""
        first = True
        async for text in reply.texts():
            await updater.add_artifact([Part(text=text)], artifact_id="reply", name="reply",
                                       append=not first, last_chunk=False)
            first = False
            await asyncio.wait({run}, timeout=RELAY_PACE_S)  # let the next deltas gather (not past the end)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()
        async with self.rt.db.session() as db:
            await service.set_state(db=db, task_id=task_id, state=tasks.CANCELED)


def build_card(agent: Agent, base_url: str) -> AgentCard:
    """The agent's public card: where to call it, what it does, that it streams, and how to sign in."""
    url = f"{base_url.rstrip('/')}/a2a/{agent.slug}/"
    description = agent.description or agent.name
    return AgentCard(
        name=agent.name,
        description=description,
        version=__version__,
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0", url=url),
                              AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0", url=url + "rest")],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id=agent.slug, name=agent.name, description=description, tags=["agentloft"],
                           input_modes=["text/plain"], output_modes=["text/plain"])],
        security_schemes={"bearer": SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(
            scheme="bearer", description="A personal API token (POST /api/auth/tokens)."))},
        security_requirements=[SecurityRequirement(schemes={"bearer": StringList()})],
    )


class A2AServers:
    """One JSON-RPC dispatcher per agent, built on first use and kept while the process lives."""

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self._handlers: dict[int, DefaultRequestHandler] = {}
        self._cards: dict[int, AgentCard] = {}
        self._dispatchers: dict[int, JsonRpcDispatcher] = {}
        self._builder = ContextBuilder()
        self._events = BufferTaskEventStream(rt)

    def handler(self, agent: Agent, card: AgentCard) -> DefaultRequestHandler:
        """The agent's request handler (both bindings share it, and with it the running tasks)."""
        handler = self._handlers.get(agent.id)
        if handler is None:
            handler = DefaultRequestHandler(
                agent_executor=AgentloftExecutor(self.rt, agent.id),
                task_store=RowTaskStore(self.rt, agent.id),
                agent_card=card,
                event_stream=self._events,
                request_context_builder=CheckedContextBuilder(),
            )
            self._handlers[agent.id] = handler
            self._cards[agent.id] = card
        else:
            self._cards[agent.id].CopyFrom(card)  # the agent may have been renamed or re-described since
        return handler

    @property
    def context_builder(self) -> ContextBuilder:
        return self._builder

    def dispatcher(self, agent: Agent, card: AgentCard) -> JsonRpcDispatcher:
        handler = self.handler(agent, card)
        if agent.id not in self._dispatchers:
            self._dispatchers[agent.id] = JsonRpcDispatcher(request_handler=handler, context_builder=self._builder)
        return self._dispatchers[agent.id]

    async def close(self) -> None:
        for handler in self._handlers.values():
            try:
                await handler.aclose()
            except Exception:
                log.debug("closing an A2A handler failed", exc_info=True)


def agent_card_dict(card: AgentCard) -> dict[str, Any]:
    return agent_card_to_dict(card)
