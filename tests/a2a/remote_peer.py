"""A remote A2A agent built with a2a-sdk alone, run in its own process: the peer of the remote-agent tests.

``python tests/a2a/remote_peer.py PORT TOKEN STREAMING [PROTOCOL [RPC_PATH]]`` serves the card at
``/.well-known/agent-card.json`` and JSON-RPC at ``RPC_PATH`` (``/`` unless given; bearer ``TOKEN``
required). What it does depends on the text it gets: ``fail ...`` fails the task with a reason,
``input ...`` asks for more input, ``slow ...`` works for a minute, ``data ...`` answers with a data
part and two files in two artifacts, ``two ...`` with two artifacts (the first in two pieces),
``status ...`` only in its final status message, ``cancel ...`` cancels its own task, ``vanish ...``
exits in the middle of its answer, ``endless ...`` streams 4,096-character chunks until it is cancelled,
``big ...`` answers with one artifact of 1.5 million characters; anything else is echoed back
(``echo: <text>``) as one artifact streamed word by word. Two answers no SDK would send, written by hand
(``Misbehave``) to a streaming request: ``flood ...`` sends an artifact event that does not end (64 KB
after 64 KB of its text, until 64 MiB are out or the reader went away, which ``GET /flood`` tells), and
``deep ...`` an event of JSON nested 200,000 deep. With PROTOCOL ``0.3`` it is an agent of protocol 0.3:
its card in the 0.3 shape, and only 0.3 method names answered; with ``rest`` it offers the HTTP+JSON
binding alone.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import sys
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from google.protobuf.struct_pb2 import Value
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware, RequestResponseEndpoint
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route


def _value(data: dict[str, Any]) -> Value:
    value = Value()
    value.struct_value.update(data)
    return value


class Echo(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        task_id, context_id = context.task_id or "", context.context_id or ""
        if context.current_task is None:
            await event_queue.enqueue_event(Task(id=task_id, context_id=context_id,
                                                 status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED)))
        updater = TaskUpdater(event_queue, task_id, context_id)
        await updater.start_work()
        text = context.get_user_input()
        if text.startswith("fail"):
            await updater.failed(updater.new_agent_message([Part(text="remote failure: the oven is cold")]))
            return
        if text.startswith("input"):
            await updater.requires_input(updater.new_agent_message([Part(text="which oven?")]))
            return
        if text.startswith("data"):
            await updater.add_artifact([Part(text="the numbers:"), Part(data=_value({"answer": 42, "unit": "cm"}))],
                                       artifact_id="numbers", name="numbers")
            await updater.add_artifact([Part(url="https://example.com/report.pdf", filename="report.pdf",
                                             media_type="application/pdf"),
                                        Part(raw=b"hello file", filename="hello.txt", media_type="text/plain")],
                                       artifact_id="files", name="files")
            await updater.complete()
            return
        if text.startswith("two"):
            for i, word in enumerate(("first", " part")):
                await updater.add_artifact([Part(text=word)], artifact_id="one", append=i > 0)
            await updater.add_artifact([Part(text="second artifact")], artifact_id="two")
            await updater.complete()
            return
        if text.startswith("status"):
            await updater.update_status(TaskState.TASK_STATE_WORKING,
                                        updater.new_agent_message([Part(text="thinking...")]))
            await updater.complete(updater.new_agent_message([Part(text="the answer is 7")]))
            return
        if text.startswith("cancel"):
            await updater.add_artifact([Part(text="started, then")], artifact_id="answer")
            await updater.cancel(updater.new_agent_message([Part(text="I gave up")]))
            return
        if text.startswith("vanish"):
            await updater.add_artifact([Part(text="half a")], artifact_id="answer")
            await asyncio.sleep(0.3)
            os._exit(1)
        if text.startswith("slow"):
            await asyncio.sleep(60)
        if text.startswith("endless"):
            for i in itertools.count():
                await updater.add_artifact([Part(text="x" * 4096)], artifact_id="answer", append=i > 0)
                await asyncio.sleep(0.01)
        if text.startswith("big"):
            await updater.add_artifact([Part(text="y" * 1_500_000)], artifact_id="answer")
            await updater.complete()
            return
        words = f"echo: {text}".split(" ")
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            await updater.add_artifact([Part(text=piece)], artifact_id="answer", name="answer", append=i > 0,
                                       last_chunk=i == len(words) - 1)
            await asyncio.sleep(0.02)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id or "", context.context_id or "").cancel()


class Bearer(BaseHTTPMiddleware):
    def __init__(self, app: Starlette, token: str) -> None:
        super().__init__(app)
        self.token = token

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.url.path != "/.well-known/agent-card.json" and \
                request.headers.get("authorization") != f"Bearer {self.token}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return await call_next(request)


FLOOD: dict[str, Any] = {"sent": 0, "closed": False}
FLOOD_BYTES = 64 * 1024 * 1024


def _sse(data: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(data).encode() + b"\n\n"


async def _flood(request: Request, request_id: Any) -> AsyncIterator[bytes]:
    yield _sse({"jsonrpc": "2.0", "id": request_id, "result": {"task": {
        "id": "flood-task", "contextId": "flood", "status": {"state": "TASK_STATE_WORKING"}}}})
    yield (b'data: {"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "result": {"artifactUpdate": '
           b'{"taskId": "flood-task", "contextId": "flood", "artifact": {"artifactId": "a", "parts": [{"text": "')
    chunk = b"z" * 65536
    try:
        # uvicorn drops what is sent after a disconnect silently: ask
        while FLOOD["sent"] < FLOOD_BYTES and not await request.is_disconnected():
            FLOOD["sent"] += len(chunk)
            yield chunk
    finally:
        FLOOD["closed"] = True


async def _deep(request: Request, request_id: Any) -> AsyncIterator[bytes]:
    yield b'data: {"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "result": ' + b"[" * 200_000
    yield b"\n\n"


class Misbehave(BaseHTTPMiddleware):
    """Answers ``flood ...`` and ``deep ...`` streaming requests as no SDK would (see the module)."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.method == "GET" and request.url.path == "/flood":
            return JSONResponse(FLOOD)
        if request.method == "POST":
            body = await request.json()
            parts = body.get("params", {}).get("message", {}).get("parts") or [{}]
            text = str(parts[0].get("text", ""))
            if body.get("method") == "SendStreamingMessage" and text.startswith(("flood", "deep")):
                stream = _flood if text.startswith("flood") else _deep
                return StreamingResponse(stream(request, body.get("id")), media_type="text/event-stream")
        return await call_next(request)


class OnlyV03(BaseHTTPMiddleware):
    """Answers only protocol 0.3 method names on JSON-RPC, as an agent on a 0.3 SDK does."""

    async def dispatch(self, request: Request, call_next: RequestResponseEndpoint) -> Response:
        if request.method == "POST":
            body = await request.json()
            if "/" not in str(body.get("method", "")):
                return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"),
                                     "error": {"code": -32601, "message": "Method not found"}})
        return await call_next(request)


def card_v03(port: int, streaming: bool) -> dict[str, Any]:
    """The card an agent on a 0.3 SDK serves."""
    return {"name": "Echo peer", "description": "Echoes what it is told, word by word.", "version": "1.0",
            "protocolVersion": "0.3.0", "url": f"http://127.0.0.1:{port}/", "preferredTransport": "JSONRPC",
            "capabilities": {"streaming": streaming}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "echo", "name": "Echo", "description": "Says it back.", "tags": ["test"]}]}


def build_v03(port: int, token: str, streaming: bool) -> Starlette:
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(),
                                    agent_card=_card(port, streaming))
    card = card_v03(port, streaming)

    async def serve_card(request: Request) -> Response:
        return JSONResponse(card)

    routes = [Route("/.well-known/agent-card.json", serve_card),
              *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True)]
    app = Starlette(routes=routes)
    app.add_middleware(OnlyV03)
    app.add_middleware(Bearer, token=token)
    return app


def build_rest(port: int, token: str, streaming: bool) -> Starlette:
    """An agent that offers the HTTP+JSON binding alone."""
    card = _card(port, streaming)
    del card.supported_interfaces[:]
    card.supported_interfaces.append(AgentInterface(protocol_binding="HTTP+JSON", protocol_version="1.0",
                                                    url=f"http://127.0.0.1:{port}"))
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_rest_routes(handler)])
    app.add_middleware(Bearer, token=token)
    return app


def build(port: int, token: str, streaming: bool, rpc: str = "/") -> Starlette:
    card = _card(port, streaming, rpc)
    handler = DefaultRequestHandler(agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card)
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url=rpc)]
    app = Starlette(routes=routes)
    app.add_middleware(Misbehave)
    app.add_middleware(Bearer, token=token)
    return app


def _card(port: int, streaming: bool, rpc: str = "/") -> AgentCard:
    return AgentCard(
        name="Echo peer", description="Echoes what it is told, word by word.", version="1.0",
        supported_interfaces=[AgentInterface(protocol_binding="JSONRPC", protocol_version="1.0",
                                             url=f"http://127.0.0.1:{port}{rpc}")],
        capabilities=AgentCapabilities(streaming=streaming), default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="Echo", description="Says it back.", tags=["test"])],
    )


if __name__ == "__main__":
    port, token, streaming = int(sys.argv[1]), sys.argv[2], sys.argv[3] == "1"
    protocol = sys.argv[4] if len(sys.argv) > 4 else "1.0"
    rpc = sys.argv[5] if len(sys.argv) > 5 else "/"
    if protocol == "0.3":
        app = build_v03(port, token, streaming)
    elif protocol == "rest":
        app = build_rest(port, token, streaming)
    else:
        app = build(port, token, streaming, rpc)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning")
