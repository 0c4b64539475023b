"""A leaner stream path for OpenAI-compatible models: same requests, cheaper reading of the reply.

The ``openai`` SDK turns every streamed chunk into a typed object (~200 us of CPU each), and pydantic-ai
then runs each through its event pipeline; both costs are per chunk. Here the SSE body is read raw,
decoded with ``orjson`` and validated into the SDK's chunk type (``chunk_of``); consecutive plain text
deltas that are already waiting in one network read are merged into one chunk before pydantic-ai sees
them (never across a thinking tag, see ``merge_text_deltas``). A model that streams slower than
we read (every real one) is passed through chunk by chunk, unchanged; a fast one costs per network read,
not per chunk. Everything non-streaming stays the SDK's and pydantic-ai's.

On the way out, a streamed request is sent by ``LeanCompletions`` instead of the SDK's request machinery,
which cost about 40% of the CPU from a run's start to the request leaving: a walk of the whole request
(every message, every tool schema) against its TypedDict annotations, request-option models built and
deep-copied per attempt, header and URL merging. The chat request types have no aliased or formatted
keys, so the body is the given parameters minus the omitted ones, serialised with ``orjson``. What the
caller sees is unchanged: the SDK client's auth and default headers, pydantic-ai's extra headers and
body, the same retries (the SDK's ``max_retries``, its ``_should_retry`` and back-off), the SDK's error
types (``APITimeoutError``, ``APIConnectionError``, its status errors with the parsed body).
"""

from __future__ import annotations

import asyncio
import re
from collections import deque
from collections.abc import AsyncIterator
from functools import cached_property
from typing import Any, cast

import httpx
import orjson
from openai import APIConnectionError, APIError, APITimeoutError, AsyncOpenAI
from openai._models import FinalRequestOptions, construct_type
from openai._utils import is_given
from openai.resources.chat import AsyncChat
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletionChunk
from pydantic import BaseModel, ValidationError
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agentloft.llm.providers import ModelSpec, build_model

_TAG = re.compile(r"</?[A-Za-z][\w:.-]*>")  # a delta that is exactly one tag: <think>, </think>, <x>


def _plain_text(payload: dict[str, Any]) -> str | None:
    """The content of a chunk that carries nothing but a text delta, else None."""
    if payload.get("usage"):
        return None
    choices = payload.get("choices")
    if not isinstance(choices, list) or len(choices) != 1:
        return None
    choice = choices[0]
    if choice.get("finish_reason") is not None or choice.get("logprobs") is not None or choice.get("index", 0):
        return None
    delta = choice.get("delta") or {}
    content = delta.get("content")
    if not isinstance(content, str):
        return None
    for key, value in delta.items():
        if value is not None and key != "content" and key != "role":
            return None
    return content


def _is_tag(text: str) -> bool:
    return text[:1] == "<" and text[-1:] == ">" and _TAG.fullmatch(text) is not None


def merge_text_deltas(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold runs of plain text deltas into their first chunk (order and everything else kept).

    Merging must not change what pydantic-ai makes of the text, however the network cut the bytes:
    - a delta that is exactly one tag (``<think>``, ``</think>``, any ``<x>``/``</x>``) is never merged:
      pydantic-ai switches between text and thinking only on a delta that equals a thinking tag, so a
      ``</think>`` folded into the text around it would turn the whole answer into reasoning;
    - a run never starts with a whitespace-only delta: pydantic-ai drops a part's leading whitespace per
      delta for some models (``ignore_streamed_leading_whitespace``)."""
    out: list[dict[str, Any]] = []
    pieces: list[str] = []
    head: dict[str, Any] | None = None

    def flush() -> None:
        nonlocal head
        if head is not None:
            if len(pieces) > 1:
                head["choices"][0]["delta"]["content"] = "".join(pieces)
            out.append(head)
            head = None
            pieces.clear()

    for payload in payloads:
        text = _plain_text(payload)
        if text is None or _is_tag(text):
            flush()
            out.append(payload)
        elif head is not None:
            pieces.append(text)
        elif not text.strip():
            out.append(payload)  # whitespace alone never starts a run
        else:
            head, pieces[:] = payload, [text]
    flush()
    return out


def chunk_of(payload: dict[str, Any]) -> ChatCompletionChunk:
    """The SDK's chunk type for a decoded payload. Validating is ~30x cheaper than the SDK's lenient
    ``construct_type`` (5 against 167 us here) and gives the same object for a well-formed chunk; a
    provider's odd chunk (a missing or mistyped field) still gets the SDK's lenient treatment."""
    try:
        return ChatCompletionChunk.model_validate(payload)
    except ValidationError:
        return cast(ChatCompletionChunk, construct_type(type_=ChatCompletionChunk, value=payload))  # typed ``object``


def _event_data(event: bytes) -> bytes | None:
    """The data of one SSE event (its ``data:`` lines joined), None when it has none."""
    if event.startswith(b"data:") and b"\n" not in event:
        return event[5:].lstrip()  # the usual one-line event, without splitting it
    lines = [line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


MERGE_LIMIT = 128  # events decoded and merged per chunk handed on, so the pipeline keeps moving


class MergingChunkStream:
    """Stands in for the SDK's ``AsyncStream[ChatCompletionChunk]`` over the same HTTP response.

    A pump task reads the body as fast as it arrives and queues its events undecoded (a network read
    rarely holds more than one SSE event, so read sizes say nothing about lag); the consumer decodes and
    merges everything queued since its last pull, which is exactly "merge while the reader is behind",
    up to ``MERGE_LIMIT`` events at a time. Until the reply's first words (or tool call) have been
    handed on, the consumer takes one event at a time: a fast model's backlog is decoded after them."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self._queue: deque[bytes] = deque()
        self._ready = asyncio.Event()
        self._ended = False
        self._error: BaseException | None = None
        self._pump_task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> MergingChunkStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._pump_task is not None and not self._pump_task.done():
            self._pump_task.cancel()
            await asyncio.gather(self._pump_task, return_exceptions=True)
        await self.response.aclose()

    def __aiter__(self) -> AsyncIterator[ChatCompletionChunk]:
        return self._chunks()

    async def _pump(self) -> None:
        pending = b""
        try:
            async for data in self.response.aiter_bytes():
                pending += data
                if b"\n\n" not in pending and b"\r\n\r\n" not in pending:
                    continue
                pending = pending.replace(b"\r\n", b"\n")
                *events, pending = pending.split(b"\n\n")
                done = self._queue_events(events)
                self._ready.set()
                if done:
                    break
        except Exception as exc:  # handed to the consumer after what was queued before it
            self._error = exc
        finally:
            self._ended = True
            self._ready.set()

    def _queue_events(self, events: list[bytes]) -> bool:
        """Queue the events' data; True at ``[DONE]``."""
        for event in events:
            data = _event_data(event)
            if data is None:
                continue  # comments, keep-alives, event names
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
                    continue
                taken, failure = self._take(min(len(queue), MERGE_LIMIT))
                for payload in merge_text_deltas(taken):
                    yield chunk_of(payload)
                if failure is not None:
                    raise failure
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
        """One event's JSON. Raises on undecodable data (json's error: it surfaces as the SDK's would)
        or an error event."""
        payload = orjson.loads(data)
        if isinstance(payload, dict) and payload.get("error"):
            error = payload["error"]
            message = error.get("message") if isinstance(error, dict) else None
            raise APIError(message=message or "An error occurred during streaming",
                           request=self.response.request, body=error)  # pyright: ignore[reportArgumentType]  # httpx, where the SDK's types say httpx2 (see ``_send``)
        return payload


def _has_output(payload: dict[str, Any]) -> bool:
    """Whether a chunk carries any of the reply (text, a tool call, reasoning), not just its role."""
    for choice in payload.get("choices") or ():
        delta = choice.get("delta") or {}
        if any(value for key, value in delta.items() if key != "role"):
            return True
    return False


_PATH = "/chat/completions"


def _json_default(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_unset=True)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def _plain_headers(headers: dict[str, Any]) -> dict[str, str]:
    """Header names in lower case; the SDK's ``Omit`` markers (and anything else not a string) left out."""
    return {name.lower(): value for name, value in headers.items() if isinstance(value, str)}


def _timeout(value: Any, fallback: Any) -> httpx.Timeout:
    """httpx's timeout from a number or an SDK (httpx2) timeout; the client's own when not given."""
    value = value if is_given(value) and value is not None else fallback
    if isinstance(value, int | float):
        return httpx.Timeout(value)
    return httpx.Timeout(connect=value.connect, read=value.read, write=value.write, pool=value.pool)


class LeanCompletions(AsyncCompletions):
    """``chat.completions`` whose streamed ``create`` sends the request itself (see the module's doc)."""

    async def create(self, **params: Any) -> Any:
        if params.get("stream") is not True:
            return await super().create(**params)
        return MergingChunkStream(await self._send(self._request(params)))

    @cached_property
    def _target(self) -> tuple[httpx.URL, dict[str, str]]:
        """The URL and the headers every streamed request of this client carries (the SDK client's auth
        and default headers, names in lower case), worked out once: httpx's header merging is quadratic."""
        client = self._client
        defaults = {**client._auth_headers({"bearer_auth": True}), **client.default_headers}
        return httpx.URL(str(client.base_url).rstrip("/") + _PATH), _plain_headers(defaults)

    def _request(self, params: dict[str, Any]) -> httpx.Request:
        """The request the SDK would build: its auth and default headers, the caller's extra headers,
        query and body, the per-request timeout (or the SDK client's)."""
        timeout = params.pop("timeout", None)
        extra_headers = params.pop("extra_headers", None) or {}
        query = params.pop("extra_query", None)
        extra_body = params.pop("extra_body", None) or {}
        body = {key: value for key, value in params.items() if is_given(value)}
        url, defaults = self._target
        return httpx.Request(
            "POST", url.copy_merge_params(query) if query else url,
            headers={**defaults, **_plain_headers(extra_headers)},
            content=orjson.dumps({**body, **extra_body}, default=_json_default),
            extensions={"timeout": _timeout(timeout, self._client.timeout).as_dict()},
        )

    async def _send(self, request: httpx.Request) -> httpx.Response:
        """Send with the SDK's retry rules (connection errors, timeouts and the statuses its
        ``_should_retry`` accepts, backed off by its ``_calculate_retry_timeout``) and its error types.

        The SDK client's HTTP client is the ``httpx`` one ``build_chat_model`` hands it (the SDK accepts
        one at run time); the SDK's annotations name only ``httpx2`` types, hence the suppressions here."""
        client = self._client
        max_retries = client.max_retries
        for attempt in range(max_retries + 1):
            retry = attempt < max_retries
            try:
                response: httpx.Response = await client._client.send(request, stream=True)  # pyright: ignore[reportArgumentType, reportAssignmentType]
            except httpx.TimeoutException as exc:
                if retry:
                    await self._back_off(max_retries - attempt, None)
                    continue
                raise APITimeoutError(request=request) from exc  # pyright: ignore[reportArgumentType]  # httpx, where the SDK's types say httpx2 (see ``_send``)
            except httpx.RequestError as exc:
                if retry:
                    await self._back_off(max_retries - attempt, None)
                    continue
                raise APIConnectionError(request=request) from exc  # pyright: ignore[reportArgumentType]  # httpx, where the SDK's types say httpx2 (see ``_send``)
            if response.status_code < 400:
                return response
            if retry and client._should_retry(response):  # pyright: ignore[reportArgumentType]  # httpx, where the SDK's types say httpx2 (see ``_send``)
                await response.aclose()
                await self._back_off(max_retries - attempt, response.headers)
                continue
            await response.aread()
            raise client._make_status_error_from_response(response)  # pyright: ignore[reportArgumentType]  # httpx, where the SDK's types say httpx2 (see ``_send``)
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _back_off(self, remaining: int, headers: httpx.Headers | None) -> None:
        options = FinalRequestOptions.construct(method="post", url=_PATH, max_retries=self._client.max_retries)
        delay = self._client._calculate_retry_timeout(remaining, options, headers)  # pyright: ignore[reportArgumentType]  # httpx, where the SDK's types say httpx2 (see ``_send``)
        await asyncio.sleep(delay)


# The SDK declares ``chat`` and ``completions`` as properties to type checkers and makes them
# ``functools.cached_property`` at run time (``openai._compat``); these overrides are the latter.
class _LeanChat(AsyncChat):
    @cached_property
    def completions(self) -> AsyncCompletions:  # pyright: ignore[reportIncompatibleMethodOverride]  # see above
        return LeanCompletions(self._client)


class LeanAsyncOpenAI(AsyncOpenAI):
    """The SDK client with ``LeanCompletions`` under ``chat.completions`` (its copies keep the class)."""

    @cached_property
    def chat(self) -> AsyncChat:  # pyright: ignore[reportIncompatibleMethodOverride]  # see ``_LeanChat``
        return _LeanChat(self)


def build_chat_model(spec: ModelSpec, *, http_client: Any = None) -> Model:
    """The model a chat run uses: pydantic-ai's ``OpenAIChatModel`` on ``LeanAsyncOpenAI`` for
    OpenAI-compatible endpoints (streamed replies come back as ``MergingChunkStream``, which stands in for
    the SDK's ``AsyncStream``), else the default for the provider."""
    if spec.provider != "openai":
        return build_model(spec, http_client=http_client)
    client = LeanAsyncOpenAI(
        base_url=spec.base_url or "https://api.openai.com/v1",
        api_key=spec.api_key or "not-needed",
        http_client=http_client,
    )
    return OpenAIChatModel(spec.model, provider=OpenAIProvider(openai_client=client))
