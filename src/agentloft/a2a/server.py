"""The public A2A 1.0 server: every enabled, A2A-callable agent answers JSON-RPC at ``/a2a/{slug}/``.

Pieces (a2a-sdk 1.3):
- ``AgentloftExecutor`` runs a task through the same ``a2a.service`` as the agent-invoke tool (same
  engine, same ``source='a2a'`` messages, same buffer ``a2a_<taskId>``) and relays the buffer's text
  deltas to the A2A client as artifact chunks, at most one every ``RELAY_PACE_S`` (what arrives in
  between goes out as one chunk).
- ``RowTaskStore`` keeps the protocol's ``Task`` on our ``a2a_task_sessions`` row (``task_data``), scoped
  by owner (our user id) and agent, so ``GetTask`` survives restarts and works from any process.
- ``A2AServers`` builds one ``DefaultRequestHandler`` per agent on first use and caches it by agent id
  (agents are created and changed at run time; nothing is mounted at start-up). The handler's
  in-memory registry of running tasks is what ``CancelTask`` and ``SubscribeToTask`` need, so it is
  kept across agent edits; only its card is refreshed, in place (``CopyFrom``) on the one card object
  per agent that the handler was built with.
Auth is our personal API token (bearer); the router resolves the user before the SDK sees the request.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

from a2a.auth.user import User as A2AUserBase
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import TaskStore, TaskUpdater
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
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import TaskNotFoundError
from google.protobuf.json_format import MessageToDict, ParseDict
from sqlalchemy import select
from starlette.requests import Request

from agentloft import __version__
from agentloft.a2a import service
from agentloft.a2a.models import A2ATaskSession
from agentloft.agents.models import Agent
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

CARD_PATH = ".well-known/agent-card.json"
# Every artifact chunk costs the SDK a task save and the client an SSE event: one per model delta could
# not keep a fast model's pace, and a slow reader would fall over a thousand events behind (the SDK then
# drops it). So the relay sends at most this often, with whatever arrived since, as one chunk.
RELAY_PACE_S = 0.05


class A2AUser(A2AUserBase):
    """Our signed-in user as the SDK sees it. ``user_name`` is the owner key of tasks: the user id, which
    unlike a username never changes hands."""

    def __init__(self, user_id: int, username: str, role: str) -> None:
        self.user_id = user_id
        self.username = username
        self.role = role

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


def _state_name(state: int) -> str:
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower()


def _owner(context: ServerCallContext) -> int | None:
    user = context.user
    return user.user_id if isinstance(user, A2AUser) else None


class RowTaskStore(TaskStore):
    """Tasks of one agent, kept as protocol JSON on ``a2a_task_sessions``; every read filters by owner."""

    def __init__(self, rt: Runtime, agent_id: int) -> None:
        self.rt = rt
        self.agent_id = agent_id

    async def save(self, task: Task, context: ServerCallContext) -> None:
        owner = _owner(context)
        if owner is None:
            return
        data = MessageToDict(task)
        async with self.rt.db.session() as db:
            row = await db.get(A2ATaskSession, task.id)
            if row is None:
                db.add(A2ATaskSession(id=task.id, agent_id=self.agent_id, user_id=owner, task_data=data,
                                      state=_state_name(task.status.state), caller_context={"via": "a2a"}))
            elif row.user_id == owner:
                row.task_data = data
                row.state = _state_name(task.status.state)

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

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        row = await self._row(task_id, context)
        if row is None or row.task_data is None:
            return None
        return ParseDict(row.task_data, Task(), ignore_unknown_fields=True)

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


def _text_deltas(frames: str) -> list[str]:
    """Text deltas in buffered SSE frames of the UI message stream (other chunk types are skipped)."""
    out = []
    for line in frames.splitlines():
        if not line.startswith("data: "):
            continue
        try:
            chunk = json.loads(line[6:])
        except ValueError:
            continue
        if isinstance(chunk, dict) and chunk.get("type") == "text-delta" and chunk.get("delta"):
            out.append(chunk["delta"])
    return out


class AgentloftExecutor(AgentExecutor):
    """Runs one A2A request as a task of our service, streaming the reply as one text artifact."""

    def __init__(self, rt: Runtime, agent_id: int) -> None:
        self.rt = rt
        self.agent_id = agent_id

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        user = context.call_context.user
        assert isinstance(user, A2AUser)  # the router refuses anonymous calls
        task_id, context_id = context.task_id or service.new_task_id(), context.context_id or ""
        updater = TaskUpdater(event_queue, task_id, context_id)
        text = context.get_user_input()
        async with self.rt.db.session() as db:
            callee = await db.get(Agent, self.agent_id)
        if callee is None:  # deleted since the request was routed; the SDK fails the task
            raise TaskNotFoundError(message="this agent no longer exists")
        caller = service.Caller(user_id=user.user_id, user_role=user.role,
                                context={"via": "a2a", "contextId": context_id})
        if context.current_task is None:
            # Our row first, then the protocol's Task: the task store keeps the Task on that row.
            await service.create_task(rt=self.rt, callee=callee, caller=caller, task_id=task_id)
            history = [context.message] if context.message else []
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id, history=history,
                                                 status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        await updater.start_work()
        if not text.strip():
            await updater.failed(self._message(updater, "the message has no text"))
            return
        async with self.rt.db.session() as db:
            row = await service.get_task_row(db=db, task_id=task_id, user_id=user.user_id)
        run = asyncio.create_task(
            service.run_task(rt=self.rt, task=row, callee=callee, caller=caller, input_text=text)
        )
        relay = asyncio.create_task(self._relay(task_id, updater, run))
        try:
            outcome = await run
        except BaseException:
            relay.cancel()
            run.cancel()
            raise
        await asyncio.wait({relay}, timeout=5)
        relay.cancel()
        if outcome.state == "completed":
            await updater.add_artifact([Part(text="")], artifact_id="reply", name="reply", append=True,
                                       last_chunk=True)
            await updater.complete(self._message(updater, outcome.text))
        else:
            await updater.failed(self._message(updater, outcome.error or outcome.state))

    @staticmethod
    def _message(updater: TaskUpdater, text: str) -> Message:
        return updater.new_agent_message([Part(text=text)])

    async def _relay(self, task_id: str, updater: TaskUpdater, run: asyncio.Task[Any]) -> None:
        """Follow the task's buffer and forward its text as artifact chunks as it arrives, one chunk per
        ``RELAY_PACE_S`` at most. The engine opens the buffer when the turn starts, so wait for it (or for
        the run to end)."""

        buffers = self.rt.buffers
        key = service.buffer_key(task_id)
        opened = asyncio.create_task(buffers.wait_open(key, limit_s=3600))
        try:
            await asyncio.wait({opened, run}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            opened.cancel()
        first = True
        async for frame in buffers.subscribe(key):  # one frame holds every chunk buffered since the last
            text = "".join(_text_deltas(frame))
            if not text:
                continue
            await updater.add_artifact([Part(text=text)], artifact_id="reply", name="reply",
                                       append=not first, last_chunk=False)
            first = False
            await asyncio.wait({run}, timeout=RELAY_PACE_S)  # let the next deltas gather (not past the end)

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id = context.task_id or ""
        await TaskUpdater(event_queue, task_id, context.context_id or "").cancel()
        async with self.rt.db.session() as db:
            await service.set_state(db=db, task_id=task_id, state="canceled")


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

    def handler(self, agent: Agent, card: AgentCard) -> DefaultRequestHandler:
        """The agent's request handler (both bindings share it, and with it the running tasks)."""
        handler = self._handlers.get(agent.id)
        if handler is None:
            handler = DefaultRequestHandler(
                agent_executor=AgentloftExecutor(self.rt, agent.id),
                task_store=RowTaskStore(self.rt, agent.id),
                agent_card=card,
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
