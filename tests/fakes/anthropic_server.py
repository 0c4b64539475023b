"""A scripted Anthropic Messages API server that the real ``anthropic`` SDK talks to over HTTP.

``POST /v1/messages`` takes the next scripted ``Reply`` from the queue (or the ``default`` responder's) and
answers in the documented wire format (https://docs.anthropic.com/en/api/messages-streaming): with
``"stream": true`` an SSE stream of ``message_start``, then per content block ``content_block_start``,
its deltas (``text_delta``; ``thinking_delta`` then ``signature_delta``; ``input_json_delta`` pieces of a
``tool_use`` block's input; none for ``redacted_thinking``) and ``content_block_stop``, a ``ping`` after
the first block's start, then ``message_delta`` (stop reason, output tokens) and ``message_stop``; an
``error`` event in the middle when the reply says so. Without ``stream`` the same reply comes as one
``message`` object. HTTP errors carry the documented error body. Every request's body and headers are
recorded.

Two replies never finish, for timeout tests: ``hang`` accepts the request and never answers (a silent
model), ``stall_after=N`` streams ``message_start`` and the first N content deltas, then nothing more.

A reply may instead carry a ``raw`` body (a stream written by hand, see ``tests/llm/corpus``); either way
``writes`` says how the stream is cut (see ``tests.fakes.sse``).
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.openai_server import STALL_S, ThreadedServer, until_gone
from tests.fakes.sse import Writes, cut, deliver, split_events


@dataclass
class Text:
    text: str
    pieces: int | None = None  # deltas to split it into (default: one per word)


@dataclass
class Thinking:
    thinking: str
    signature: str = "sig-fake"
    pieces: int | None = None


@dataclass
class Redacted:
    data: str = "EmwKAhgBEgy-redacted"


@dataclass
class ToolUse:
    name: str
    input: dict[str, Any]
    id: str = "toolu_fake"
    pieces: int = 3  # ``input_json_delta`` pieces the input's JSON is cut into


Block = Text | Thinking | Redacted | ToolUse


@dataclass
class Reply:
    """One model response: its content blocks, usage and stop reason, or an HTTP error, or a stream that
    fails with an ``error`` event after ``error_after`` blocks."""

    blocks: list[Block] = field(default_factory=list)
    input_tokens: int = 10
    output_tokens: int = 5
    stop_reason: str | None = None  # default: ``tool_use`` when a block is one, else ``end_turn``
    error_status: int | None = None
    error_type: str = "api_error"
    error_message: str = "fake model failure"
    error_after: int | None = None
    delay: float = 0.0  # seconds between writes
    hang: bool = False  # accept the request and never answer (no headers either)
    stall_after: int | None = None  # stream message_start and this many content deltas, then nothing more
    raw: bytes | None = None
    writes: Writes = "event"


def say(text: str, **kw: Any) -> Reply:
    return Reply(blocks=[Text(text)], **kw)


def _split(text: str, pieces: int | None) -> list[str]:
    if not text:
        return [""]
    if pieces:
        size = max(1, -(-len(text) // pieces))
        return [text[i:i + size] for i in range(0, len(text), size)]
    words = text.split(" ")
    return [w + (" " if i < len(words) - 1 else "") for i, w in enumerate(words)]


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _start_block(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": ""}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": "", "signature": ""}
    if isinstance(block, Redacted):
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": {}}


def _deltas(block: Block) -> list[dict[str, Any]]:
    if isinstance(block, Text):
        return [{"type": "text_delta", "text": t} for t in _split(block.text, block.pieces)]
    if isinstance(block, Thinking):
        return [{"type": "thinking_delta", "thinking": t} for t in _split(block.thinking, block.pieces)] + [
            {"type": "signature_delta", "signature": block.signature}]
    if isinstance(block, Redacted):
        return []
    raw = json.dumps(block.input)
    size = max(1, -(-len(raw) // block.pieces))
    return [{"type": "input_json_delta", "partial_json": raw[i:i + size]} for i in range(0, len(raw), size)]


def _stop_reason(reply: Reply) -> str:
    if reply.stop_reason:
        return reply.stop_reason
    return "tool_use" if any(isinstance(b, ToolUse) for b in reply.blocks) else "end_turn"


def stream_events(reply: Reply, model: str) -> list[bytes]:
    """The reply's SSE events, in order."""
    message = {"id": "msg_fake", "type": "message", "role": "assistant", "content": [], "model": model,
               "stop_reason": None, "stop_sequence": None,
               "usage": {"input_tokens": reply.input_tokens, "output_tokens": 1}}
    out = [_event("message_start", {"type": "message_start", "message": message})]
    for index, block in enumerate(reply.blocks):
        if reply.error_after is not None and index >= reply.error_after:
            break
        out.append(_event("content_block_start",
                          {"type": "content_block_start", "index": index, "content_block": _start_block(block)}))
        if index == 0:
            out.append(_event("ping", {"type": "ping"}))
        for delta in _deltas(block):
            out.append(_event("content_block_delta", {"type": "content_block_delta", "index": index,
                                                      "delta": delta}))
        out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    if reply.error_after is not None:
        out.append(_event("error", {"type": "error", "error": {"type": reply.error_type,
                                                               "message": reply.error_message}}))
        return out
    out.append(_event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": _stop_reason(reply), "stop_sequence": None},
                                        "usage": {"output_tokens": reply.output_tokens}}))
    out.append(_event("message_stop", {"type": "message_stop"}))
    return out


def _content(block: Block) -> dict[str, Any]:
    if isinstance(block, Text):
        return {"type": "text", "text": block.text}
    if isinstance(block, Thinking):
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    if isinstance(block, Redacted):
        return {"type": "redacted_thinking", "data": block.data}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}


def message(reply: Reply, model: str) -> dict[str, Any]:
    return {"id": "msg_fake", "type": "message", "role": "assistant", "model": model,
            "content": [_content(b) for b in reply.blocks], "stop_reason": _stop_reason(reply),
            "stop_sequence": None,
            "usage": {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}}


def _last_user_text(body: dict[str, Any]) -> str:
    for msg in reversed(body.get("messages", [])):
        if msg.get("role") != "user":
            continue
        content = msg.get("content")
        if isinstance(content, str):
            return content
        texts = [p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("type") == "text"]
        if texts:
            return " ".join(texts)
    return ""


def echo(body: dict[str, Any]) -> Reply:
    return say(f"echo: {_last_user_text(body)}")


class FakeAnthropic:
    """The script: a queue of replies plus a record of requests. Thread-safe for tests in another thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.default: Callable[[dict[str, Any]], Reply] = echo

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        with self._lock:
            self._queue.clear()
            self.requests.clear()
            self.headers.clear()
            self.default = echo

    def next_reply(self, body: dict[str, Any], headers: dict[str, str]) -> Reply:
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
            if self._queue:
                return self._queue.popleft()
        return self.default(body)


def _until_stall(events: list[bytes], deltas: int) -> list[bytes]:
    """The events up to ``message_start`` and the first ``deltas`` content deltas."""
    kept, seen = [], 0
    for event in events:
        if seen >= deltas and kept:
            break
        kept.append(event)
        seen += event.startswith(b"event: content_block_delta")
    return kept


async def _stream(reply: Reply, model: str) -> AsyncIterator[bytes]:
    events = split_events(reply.raw) if reply.raw is not None else stream_events(reply, model)
    if reply.stall_after is not None:
        async for piece in deliver(_until_stall(events, reply.stall_after), delay=reply.delay):
            yield piece
        await asyncio.sleep(STALL_S)
        return
    async for piece in deliver(cut(events, reply.writes), delay=reply.delay):
        yield piece


def build_app(fake: FakeAnthropic) -> Starlette:
    async def messages(request: Request) -> Response:
        body = await request.json()
        reply = fake.next_reply(body, dict(request.headers))
        model = body.get("model", "claude-fake")
        if reply.hang:
            await until_gone(request)
        if reply.error_status:
            return JSONResponse({"type": "error", "error": {"type": reply.error_type,
                                                            "message": reply.error_message}},
                                status_code=reply.error_status)
        if body.get("stream"):
            return StreamingResponse(_stream(reply, model), media_type="text/event-stream")
        if reply.delay:
            await asyncio.sleep(reply.delay)
        return JSONResponse(message(reply, model))

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])


class FakeAnthropicServer(ThreadedServer):
    def __init__(self) -> None:
        self.fake = FakeAnthropic()
        super().__init__(build_app(self.fake))

    @property
    def base_url(self) -> str:
        return self.url
