"""A scripted OpenAI-compatible model server that the real provider code talks to over HTTP.

Each call to ``/v1/chat/completions`` takes the next scripted ``Step`` from the queue (or, when the queue
is empty, the ``default`` responder's step). A step is text in chunks, one or several tool calls, an HTTP
error, a malformed stream, or a stall; each can be slowed per chunk and carries usage. Every request body
is recorded so tests can assert what the model was sent (tools, messages, max tokens).

Two steps never finish, for timeout tests: ``hang`` accepts the request and never answers (not even its
headers: a silent model), ``stall_after=N`` sends the headers and N text chunks, then nothing more (a model
that stops between chunks). Both keep the connection open until the client gives up or the server stops.

A step may instead carry a ``raw`` body (a stream written by hand, see ``tests/llm/corpus``), and says
how its stream is cut into writes (``writes``: one event per write, the whole body at once, or N bytes
per write; see ``tests.fakes.sse``).

``/v1/embeddings`` answers every text with ``tests.fakes.embeddings.vector`` (deterministic; texts that
share words are near), ``embedding_dim`` long unless the request asks for ``dimensions``. Its own queue of
steps (``push_embedding``) scripts failures: an HTTP error, a hang, a delay; each request is recorded in
``embedding_requests``.

Run it in a thread with ``FakeModelServer().start()``; ``.base_url`` is what a model configuration needs.
"""

from __future__ import annotations

import asyncio
import base64
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes import embeddings
from tests.fakes.sse import Writes, cut, deliver, split_events


@dataclass
class ToolCall:
    name: str
    args: dict[str, Any]
    id: str | None = None


@dataclass
class Step:
    """One model response. Exactly one of text / tool_calls / error_status / hang matters most, but text
    and tool calls may be combined (text first, then the calls), as real models do."""

    text: str = ""
    chunks: int | None = None  # split text into this many chunks (default: by word)
    tool_calls: list[ToolCall] = field(default_factory=list)
    error_status: int | None = None
    error_message: str = "fake model failure"
    malformed_after: int | None = None  # send this many good chunks, then garbage
    drop_after: int | None = None  # send this many text chunks, then drop the connection mid-body
    hang: bool = False  # accept the request and never answer (no headers either)
    stall_after: int | None = None  # send the headers and this many text chunks, then nothing more
    delay: float = 0.0  # seconds between chunks
    first_delay: float = 0.0  # seconds before the first chunk
    input_tokens: int = 10
    output_tokens: int | None = None
    match: Callable[[dict[str, Any]], bool] | None = None  # only used for requests it matches
    reasoning: str = ""  # streamed before the text, in ``reasoning_field`` deltas (one per word)
    reasoning_field: str = "reasoning_content"
    raw: bytes | None = None  # the whole streamed body, sent as is (cut as ``writes`` says)
    writes: Writes = "event"


def text(value: str, **kw: Any) -> Step:
    return Step(text=value, **kw)


def call(name: str, args: dict[str, Any] | None = None, *, id: str | None = None, **kw: Any) -> Step:
    return Step(tool_calls=[ToolCall(name, args or {}, id=id)], **kw)


def _split(step: Step) -> list[str]:
    if not step.text:
        return []
    if step.chunks:
        n = max(1, step.chunks)
        size = max(1, -(-len(step.text) // n))
        return [step.text[i : i + size] for i in range(0, len(step.text), size)]
    words = step.text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


def _last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") == "user":
            content = msg.get("content")
            if isinstance(content, list):
                return " ".join(p.get("text", "") for p in content if isinstance(p, dict))
            return str(content)
    return ""


def echo(body: dict[str, Any]) -> Step:
    return Step(text=f"echo: {_last_user_text(body)}")


STALL_S = 3600.0  # how long a stalled stream keeps quiet: longer than any test waits


async def until_gone(request: Request) -> None:
    """Wait, saying nothing, until the client hangs up (the request's body was read: the next message the
    server passes on is the disconnect)."""
    await request.receive()


class FakeModel:
    """The script: a queue of steps plus a record of requests. Thread-safe for tests in another thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Step] = deque()
        self.requests: list[dict[str, Any]] = []
        # each request's headers (lower-case names), in order, plus ":peer": the client's "host:port"
        self.headers: list[dict[str, str]] = []
        self.default: Callable[[dict[str, Any]], Step] = echo
        self._embedding_queue: deque[Step] = deque()
        self.embedding_requests: list[dict[str, Any]] = []
        self.embedding_dim = embeddings.DIM

    def push(self, *steps: Step) -> None:
        with self._lock:
            self._queue.extend(steps)

    def push_embedding(self, *steps: Step) -> None:
        """Script the next ``/v1/embeddings`` answers (``error_status``, ``hang``, ``first_delay``)."""
        with self._lock:
            self._embedding_queue.extend(steps)

    def next_embedding_step(self, body: dict[str, Any]) -> Step | None:
        with self._lock:
            self.embedding_requests.append(body)
            return self._embedding_queue.popleft() if self._embedding_queue else None

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.headers.clear()
            self.default = echo
            self._embedding_queue.clear()
            self.embedding_requests.clear()
            self.embedding_dim = embeddings.DIM

    def pending(self) -> int:
        with self._lock:
            return len(self._queue)

    def next_step(self, body: dict[str, Any], headers: dict[str, str] | None = None) -> Step:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers or {})
            for i, step in enumerate(self._queue):
                if step.match is None or step.match(body):
                    del self._queue[i]
                    return step
        return self.default(body)


def _chunk(model: str, delta: dict[str, Any], finish: str | None = None) -> str:
    payload = {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(payload)}\n\n"


def _usage_chunk(model: str, step: Step, completion: int) -> str:
    usage = {
        "prompt_tokens": step.input_tokens,
        "completion_tokens": completion,
        "total_tokens": step.input_tokens + completion,
    }
    payload = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 0, "model": model,
               "choices": [], "usage": usage}
    return f"data: {json.dumps(payload)}\n\n"


def _events(step: Step, model: str) -> list[tuple[float, str]]:
    """The stream's events, each with the pause before it."""
    out: list[tuple[float, str]] = [(step.first_delay, _chunk(model, {"role": "assistant", "content": ""}))]
    for word in _words(step.reasoning):
        out.append((step.delay, _chunk(model, {step.reasoning_field: word})))
    pieces = _split(step)
    for i, piece in enumerate(pieces):
        if step.malformed_after is not None and i >= step.malformed_after:
            out.append((0.0, "data: {this is not json\n\n"))
            return out
        if step.stall_after is not None and i >= step.stall_after:
            out.append((STALL_S, ""))
            return out
        out.append((step.delay, _chunk(model, {"content": piece})))
    for idx, tc in enumerate(step.tool_calls):
        call_id = tc.id or f"call_{idx}_{abs(hash((tc.name, json.dumps(tc.args, sort_keys=True)))) % 10**8}"
        out.append((0.0, _chunk(model, {"tool_calls": [{"index": idx, "id": call_id, "type": "function",
                                                        "function": {"name": tc.name, "arguments": ""}}]})))
        out.append((0.0, _chunk(model, {"tool_calls": [{"index": idx,
                                                        "function": {"arguments": json.dumps(tc.args)}}]})))
    out.append((0.0, _chunk(model, {}, "tool_calls" if step.tool_calls else "stop")))
    completion = step.output_tokens if step.output_tokens is not None else max(1, len(pieces))
    out.append((0.0, _usage_chunk(model, step, completion)))
    out.append((0.0, "data: [DONE]\n\n"))
    return out


def _words(value: str) -> list[str]:
    words = value.split(" ") if value else []
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


async def _stream(step: Step, model: str) -> AsyncIterator[bytes]:
    if step.raw is not None:
        async for piece in deliver(cut(split_events(step.raw), step.writes), delay=step.delay):
            yield piece
        return
    events = _events(step, model)
    if step.writes != "event":
        await asyncio.sleep(events[0][0])
        async for piece in deliver(cut([e.encode() for _, e in events], step.writes)):
            yield piece
        return
    if step.drop_after is not None:  # the role chunk, then that many text chunks
        events = events[: 1 + step.drop_after]
    for pause, event in events:
        if pause:
            await asyncio.sleep(pause)
        if event:
            yield event.encode()
    if step.drop_after is not None:
        raise ConnectionResetError("fake model dropped the connection")  # uvicorn aborts the response


def _non_stream(step: Step, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": step.text or None}
    if step.tool_calls:
        message["tool_calls"] = [
            {"id": tc.id or f"call_{i}", "type": "function",
             "function": {"name": tc.name, "arguments": json.dumps(tc.args)}}
            for i, tc in enumerate(step.tool_calls)
        ]
    completion = step.output_tokens if step.output_tokens is not None else max(1, len(_split(step)))
    return {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "message": message,
                     "finish_reason": "tool_calls" if step.tool_calls else "stop"}],
        "usage": {"prompt_tokens": step.input_tokens, "completion_tokens": completion,
                  "total_tokens": step.input_tokens + completion},
    }


def _error(step: Step) -> JSONResponse:
    return JSONResponse({"error": {"message": step.error_message, "type": "server_error", "code": None}},
                        status_code=step.error_status or 500)


def _embedding_reply(body: dict[str, Any], dim: int) -> dict[str, Any]:
    texts = body.get("input", [])
    texts = [texts] if isinstance(texts, str) else list(texts)
    dim = int(body.get("dimensions") or dim)
    data = []
    for i, text in enumerate(texts):
        values = embeddings.vector(str(text), dim)
        encoded: Any = values
        if body.get("encoding_format") == "base64":
            encoded = base64.b64encode(struct.pack(f"<{dim}f", *values)).decode()
        data.append({"object": "embedding", "index": i, "embedding": encoded})
    tokens = sum(len(str(t).split()) for t in texts)
    return {"object": "list", "data": data, "model": body.get("model", "fake"),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}


def build_app(fake: FakeModel) -> Starlette:
    async def completions(request: Request) -> Response:
        body = await request.json()
        peer = f"{request.client.host}:{request.client.port}" if request.client else ""
        step = fake.next_step(body, {**request.headers, ":peer": peer})
        model = body.get("model", "fake")
        if step.hang:
            await until_gone(request)
        if step.error_status:
            if step.first_delay:
                await asyncio.sleep(step.first_delay)
            return JSONResponse(
                {"error": {"message": step.error_message, "type": "server_error", "code": None}},
                status_code=step.error_status,
            )
        if body.get("stream"):
            return StreamingResponse(_stream(step, model), media_type="text/event-stream")
        if step.first_delay:
            await asyncio.sleep(step.first_delay)
        return JSONResponse(_non_stream(step, model))

    async def embed(request: Request) -> Response:
        body = await request.json()
        step = fake.next_embedding_step(body)
        if step is not None:
            if step.hang:
                await until_gone(request)
            if step.first_delay:
                await asyncio.sleep(step.first_delay)
            if step.error_status:
                return _error(step)
        return JSONResponse(_embedding_reply(body, fake.embedding_dim))

    async def models(request: Request) -> Response:
        return JSONResponse({"object": "list", "data": [{"id": "fake-model", "object": "model", "owned_by": "tests"}]})

    return Starlette(routes=[
        Route("/v1/chat/completions", completions, methods=["POST"]),
        Route("/v1/embeddings", embed, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
    ])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ThreadedServer:
    """Runs an ASGI app under uvicorn in a daemon thread on a free loopback port."""

    def __init__(self, app: Any, port: int | None = None, **options: Any) -> None:
        """``options`` go to ``uvicorn.Config`` (e.g. the app's proxy settings, ``agentloft.cli``)."""
        self.port = port or free_port()
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="on",
                                timeout_graceful_shutdown=2, **options)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("server did not start")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


class FakeModelServer(ThreadedServer):
    def __init__(self) -> None:
        self.fake = FakeModel()
        super().__init__(build_app(self.fake))

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"


def sse_body(*deltas: dict[str, Any], finish: str | None = "stop", usage: tuple[int, int] | None = (10, 5),
             model: str = "fake", done: bool = True) -> bytes:
    """A streamed chat completion written out: a chunk per delta (a delta of ``{}`` is skipped), then the
    finish reason, usage in a last chunk without choices, and ``[DONE]``; each part can be left out."""
    events = [_chunk(model, delta) for delta in deltas if delta]
    if finish is not None:
        events.append(_chunk(model, {}, finish))
    if usage is not None:
        events.append(_usage_chunk(model, Step(input_tokens=usage[0]), usage[1]))
    if done:
        events.append("data: [DONE]\n\n")
    return "".join(events).encode()
