"""A cheaper reader for streamed chat completions, on the ``openai`` SDK's public API only.

The SDK turns every streamed chunk into a typed object through its lenient constructor, and pydantic-ai
then runs each one through its event pipeline; both costs are per chunk. Here the request still goes
through the SDK (``chat.completions.with_streaming_response.create``: its request building, auth,
retries and error types), but the body is read raw: a pump task reads it as it arrives and queues its
events undecoded, and the consumer decodes everything queued since its last pull with ``orjson``,
merges consecutive deltas of plain text (or of one reasoning field) into one chunk, and validates each
into the SDK's ``ChatCompletionChunk``. A model slower than we read (every real one, unless the server
is loaded) is passed through chunk by chunk; a backlog costs per pull, not per chunk.

Merging must not change what pydantic-ai makes of the stream, whichever way the network cut the bytes:
- a delta that is exactly one tag (``<think>``, ``</think>``, any ``<x>``/``</x>``) is never merged:
  pydantic-ai switches between text and thinking only on a delta that equals a thinking tag;
- a run never starts with a whitespace-only delta: pydantic-ai drops leading whitespace of a part for
  some models (``ignore_streamed_leading_whitespace``) and holds it after reasoning, per delta;
- text, reasoning fields, tool calls, finish reasons and usage never share a merged chunk.

The SSE framing follows the SDK's decoder: LF, CRLF or CR line ends, ``data:`` lines joined by ``\\n``,
comment lines and data-less events skipped, an event not ended by a blank line dropped, ``[DONE]`` ends
the stream (the rest of the body is then read in the background, briefly, so the connection can be
reused), a payload with ``error`` raises the SDK's ``APIError``, transport failures become its
``APITimeoutError`` and ``APIConnectionError``.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import AsyncIterator
from functools import cached_property
from typing import Any

import httpx2
import orjson
from openai import APIConnectionError, APIError, APITimeoutError, AsyncOpenAI, omit
from openai.resources.chat import AsyncChat
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletionChunk
from pydantic import ValidationError
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel

from agentloft.core.db import whole_characters
from agentloft.llm.tool_schemas import ToolSchemaCache

MERGE_LIMIT = 128  # events decoded and merged per chunk handed on, so the pipeline keeps moving
DRAIN_S = 1.0  # how long the rest of a body after ``[DONE]`` may take before the connection is dropped
_DRAINS: set[asyncio.Task[None]] = set()  # pumps reading a body's end after their stream was closed
_TAG = re.compile(r"</?[A-Za-z][\w:.-]*>")
_MERGED_FIELDS = ("content", "reasoning_content", "reasoning")


# --- merging ------------------------------------------------------------------------------------------


def _mergeable(payload: dict[str, Any]) -> tuple[str, str] | None:
    """``(field, text)`` when the chunk carries nothing but one string delta of text or of a reasoning
    field (a role may come with it), else None."""
    if payload.get("usage"):
        return None
    choices = payload.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    choice = choices[0]
    if not isinstance(choice, dict) or choice.get("finish_reason") is not None \
            or choice.get("logprobs") is not None or choice.get("index", 0):
        return None
    delta = choice.get("delta")
    if not isinstance(delta, dict):
        return None
    found: tuple[str, str] | None = None
    for key, value in delta.items():
        if value is None or key == "role":
            continue
        if found is not None or key not in _MERGED_FIELDS or not isinstance(value, str):
            return None
        found = (key, value)
    return found


def _is_tag(text: str) -> bool:
    return text[:1] == "<" and text[-1:] == ">" and _TAG.fullmatch(text) is not None


def merge_deltas(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold runs of same-field string deltas into their first chunk; everything else keeps its place.
    See the module's doc for what never merges."""
    out: list[dict[str, Any]] = []
    pieces: list[str] = []
    head: dict[str, Any] | None = None
    head_field = ""

    def flush() -> None:
        nonlocal head
        if head is not None:
            if len(pieces) > 1:
                head["choices"][0]["delta"][head_field] = "".join(pieces)
            out.append(head)
            head = None
            pieces.clear()

    for payload in payloads:
        found = _mergeable(payload)
        if found is None or (found[0] == "content" and _is_tag(found[1])):
            flush()
            out.append(payload)
        elif head is not None and found[0] == head_field:
            pieces.append(found[1])
        else:
            flush()
            if found[0] == "content" and not found[1].strip():
                out.append(payload)  # whitespace alone never starts a run
            else:
                head, head_field, pieces[:] = payload, found[0], [found[1]]
    flush()
    return out


def chunk_of(payload: dict[str, Any]) -> ChatCompletionChunk:
    """The SDK's chunk type for a decoded payload. Validating is far cheaper than the SDK's lenient
    construction and gives the same object for a well-formed chunk; an odd chunk (a field missing or of
    another type, as some OpenAI-compatible servers send) gets the SDK's lenient ``construct``."""
    try:
        return ChatCompletionChunk.model_validate(payload)
    except ValidationError:
        return ChatCompletionChunk.construct(**payload)


# --- SSE framing --------------------------------------------------------------------------------------


class EventSplitter:
    """Raw SSE bytes in, the complete events' text out (line ends normalised to LF)."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> list[bytes]:
        buf = self._rest + data
        hold = b""
        if buf.endswith(b"\r"):  # maybe the first half of a CRLF: decide when the next byte is here
            buf, hold = buf[:-1], b"\r"
        if b"\r" in buf:
            buf = buf.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        if b"\n\n" not in buf:
            self._rest = buf + hold
            return []
        *events, rest = buf.split(b"\n\n")
        self._rest = rest + hold
        return events


def event_data(event: bytes) -> bytes | None:
    """The data of one event (its ``data:`` lines joined by LF), None when it has none."""
    if event.startswith(b"data: ") and b"\n" not in event:
        return event[6:]  # the usual one-line event
    lines = []
    for line in event.split(b"\n"):
        if line.startswith(b"data:"):
            value = line[5:]
            lines.append(value[1:] if value.startswith(b" ") else value)
    return b"\n".join(lines) if lines else None


def _decode(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        # what the SDK does: its error (or its leniency: NaN, big integers, half a surrogate pair)
        return whole_characters(json.loads(data))


# --- the stream ---------------------------------------------------------------------------------------


class MergingChunkStream:
    """Stands in for the SDK's ``AsyncStream[ChatCompletionChunk]`` over a streamed response.

    A pump task reads the body as fast as it arrives and queues its events undecoded; the consumer
    decodes and merges everything queued since its last pull, which is exactly "merge while the reader is
    behind", up to ``MERGE_LIMIT`` events at a time. Until the reply's first words (or tool call) have
    been handed on, the consumer takes one event at a time and the pump reads no further ahead than the
    consumer has taken: a fast model's backlog, already in the socket buffer, arrives in reads of
    hundreds of events that the pump parses without giving the event loop back, and parsing it first
    delayed the first words by that much (20 ms of a 2,000-chunk reply under load, ``bench.turn_floor``)."""

    def __init__(self, response: httpx2.Response) -> None:
        self.response = response
        self._queue: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self._ended = False
        self._draining = False
        self._error: BaseException | None = None
        self._pump_task: asyncio.Task[None] | None = None
        self._started = False  # the first words (or tool call) were handed on
        self._caught_up = asyncio.Event()  # the consumer took what was queued, or started

    async def __aenter__(self) -> MergingChunkStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop reading and close the response; a body being drained after ``[DONE]`` is left to finish
        (it closes the response itself, within ``DRAIN_S``)."""
        task = self._pump_task
        if task is not None and not task.done():
            if self._draining:
                _DRAINS.add(task)
                task.add_done_callback(_DRAINS.discard)
                return
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        await self.response.aclose()

    def __aiter__(self) -> AsyncIterator[ChatCompletionChunk]:
        return self._chunks()

    def _end(self) -> None:
        self._ended = True
        self._ready.set()

    async def _pump(self) -> None:
        splitter = EventSplitter()
        body = aiter(self.response.aiter_bytes())
        try:
            async for data in body:
                events = splitter.feed(data)
                if events:
                    done = self._queue_events(events)
                    self._ready.set()
                    if done:
                        self._end()  # the consumer need not wait for the body's end
                        self._draining = True
                        await self._drain(body)
                        return
                    if not self._started:
                        self._caught_up.clear()
                        await self._caught_up.wait()
        except httpx2.TimeoutException as exc:
            self._error = APITimeoutError(request=self.response.request)
            self._error.__cause__ = exc
        except httpx2.RequestError as exc:
            self._error = APIConnectionError(request=self.response.request)
            self._error.__cause__ = exc
        except Exception as exc:  # handed to the consumer after what was queued before it
            self._error = exc
        finally:
            self._end()

    async def _drain(self, body: AsyncIterator[bytes]) -> None:
        """Read what follows ``[DONE]`` (the body's end, usually already on its way), so the connection
        goes back to the pool; a body that goes on longer is cut off with its connection."""
        try:
            async with asyncio.timeout(DRAIN_S):
                async for _ in body:
                    pass
        except (TimeoutError, httpx2.HTTPError):
            pass
        finally:
            await self.response.aclose()  # nothing left to do when the body was read to its end

    def _queue_events(self, events: list[bytes]) -> bool:
        """Queue the events' data; True at ``[DONE]``."""
        for event in events:
            data = event_data(event)
            if data is None:
                continue  # comments, keep-alives, events without data
            if data.startswith(b"[DONE]"):
                return True
            self._queue.append(data)
        return False

    async def _chunks(self) -> AsyncIterator[ChatCompletionChunk]:
        self._pump_task = asyncio.create_task(self._pump())
        started = False
        queue = self._queue
        while True:
            await self._ready.wait()
            self._ready.clear()
            while queue:
                if not started:
                    payload = self._payload(queue.popleft())
                    started = _has_output(payload)
                    yield chunk_of(payload)
                    if started:  # taken: the pump may read on
                        self._started = True
                        self._caught_up.set()
                    continue
                taken, failure = self._take(min(len(queue), MERGE_LIMIT))
                for payload in merge_deltas(taken):
                    yield chunk_of(payload)
                if failure is not None:
                    raise failure
            self._caught_up.set()
            if self._ended and not queue:
                if self._error is not None:
                    raise self._error
                return

    def _take(self, count: int) -> tuple[list[dict[str, Any]], Exception | None]:
        """Decode up to ``count`` queued events; stops at one that fails, whose error comes back after
        the good ones before it (they still go out)."""
        taken: list[dict[str, Any]] = []
        for _ in range(count):
            try:
                taken.append(self._payload(self._queue.popleft()))
            except Exception as exc:
                return taken, exc
        return taken, None

    def _payload(self, data: bytes) -> dict[str, Any]:
        """One event's JSON. Raises on undecodable data (json's error, as the SDK's would) or an error
        event (the SDK's ``APIError``, as it raises it)."""
        payload = _decode(data)
        if isinstance(payload, dict) and payload.get("error"):
            error = payload["error"]
            message = error.get("message") if isinstance(error, dict) else None
            if not isinstance(message, str) or not message:
                message = "An error occurred during streaming"
            raise APIError(message=message, request=self.response.request, body=error)
        return payload  # a chunk is a JSON object; anything else fails where it is read


def _has_output(payload: dict[str, Any]) -> bool:
    """Whether a chunk carries any of the reply (text, a tool call, reasoning), not just its role."""
    for choice in payload.get("choices") or ():
        delta = (choice.get("delta") if isinstance(choice, dict) else None) or {}
        if any(value for key, value in delta.items() if key != "role"):
            return True
    return False


# --- the client ---------------------------------------------------------------------------------------


class LeanCompletions(AsyncCompletions):
    """``chat.completions`` whose streamed ``create`` reads the reply with ``MergingChunkStream``; the
    request itself is the SDK's, sent through its public ``with_streaming_response``."""

    def __init__(self, client: AsyncOpenAI) -> None:
        super().__init__(client)
        # A plain resource on the same client: ``with_streaming_response`` wraps the resource's own
        # ``create``, which on this class would be this method again.
        self._streaming = AsyncCompletions(client).with_streaming_response

    async def create(self, **params: Any) -> Any:
        if params.get("stream") is not True:
            return await super().create(**params)
        response = await self._streaming.create(**_as_is(params)).__aenter__()
        return MergingChunkStream(response.http_response)


# Request fields sent as given. Before sending, the SDK walks the request through a transform driven by
# its parameter types (renaming aliased fields, formatting dates and files). No chat-completion parameter
# type has such a field (``tests/llm/test_lean_openai.py`` checks), so for these the walk is an identity
# that costs ~0.15 ms per message and per tool, on every request of a run: 6 ms for a 40-message
# conversation. They go in ``extra_body``, which the SDK merges over the body as given (documented);
# ``messages`` is a required argument, so an empty list stands in for it.
_AS_IS = ("messages", "tools")


def _as_is(params: dict[str, Any]) -> dict[str, Any]:
    moved = {key: params[key] for key in _AS_IS if isinstance(params.get(key), list)}
    if not moved:
        return params
    extra = params.get("extra_body")
    left: dict[str, Any] = {"messages": []} if "messages" in moved else {}
    if "tools" in moved:
        left["tools"] = omit
    return {**params, **left, "extra_body": {**moved, **(extra if isinstance(extra, dict) else {})}}


# The SDK declares ``chat`` and ``completions`` as properties to type checkers and makes them
# ``functools.cached_property`` at run time (``openai._compat``); these overrides are the latter.
class _LeanChat(AsyncChat):
    def __init__(self, client: AsyncOpenAI) -> None:
        super().__init__(client)
        self._owner = client

    @cached_property
    def completions(self) -> AsyncCompletions:  # pyright: ignore[reportIncompatibleMethodOverride]  # see above
        return LeanCompletions(self._owner)


class LeanAsyncOpenAI(AsyncOpenAI):
    """The SDK client with ``LeanCompletions`` under ``chat.completions`` (its copies keep the class)."""

    @cached_property
    def chat(self) -> AsyncChat:  # pyright: ignore[reportIncompatibleMethodOverride]  # see ``_LeanChat``
        return _LeanChat(self)


class LeanChatModel(OpenAIChatModel):
    """pydantic-ai's OpenAI chat model, adapting each tool's schema to the profile once
    (``llm.tool_schemas``)."""

    @cached_property
    def _tool_schemas(self) -> ToolSchemaCache:
        return ToolSchemaCache()

    def customize_request_parameters(self, model_request_parameters: ModelRequestParameters) -> ModelRequestParameters:
        return self._tool_schemas.customize(super().customize_request_parameters, model_request_parameters)
