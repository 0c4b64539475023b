"""A leaner stream path for OpenAI-compatible models: same requests, cheaper reading of the reply.

The ``openai`` SDK turns every streamed chunk into a typed object (~200 us of CPU each), and pydantic-ai
then runs each through its event pipeline; both costs are per chunk. Here the SSE body is read raw and
decoded with ``orjson``; consecutive plain text deltas that are already waiting in one network read are
merged into one chunk before the SDK's types and pydantic-ai see them. A model that streams slower than
we read (every real one) is passed through chunk by chunk, unchanged; a fast one costs per network read,
not per chunk. Requests, retries, errors and everything non-streaming stay the SDK's and pydantic-ai's.

On the way out, a streamed request skips one SDK step: ``chat.completions.create`` walks the whole
request (every message, every tool schema) against its TypedDict annotations to rename aliased keys and
drop omitted values, about a third of the time from a run's start to the request leaving. The chat
request types have no aliased or formatted keys, so ``LeanCompletions`` drops the omitted values itself
and hands the body to the SDK's own ``_post`` (same URL, headers, auth, retries and error mapping).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from functools import cached_property
from typing import Any

import httpx
import orjson
from openai import APIError, AsyncOpenAI, AsyncStream
from openai._base_client import make_request_options
from openai._models import construct_type
from openai._utils import is_given
from openai.resources.chat import AsyncChat
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic_ai.models import Model
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agentloft.llm.providers import ModelSpec, build_model


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


def merge_text_deltas(payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Fold runs of plain text deltas into their first chunk (order and everything else kept)."""
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
        if text is None:
            flush()
            out.append(payload)
        elif head is None:
            head, pieces[:] = payload, [text]
        else:
            pieces.append(text)
    flush()
    return out


def _event_data(event: bytes) -> bytes | None:
    """The data of one SSE event (its ``data:`` lines joined), None when it has none."""
    if event.startswith(b"data:") and b"\n" not in event:
        return event[5:].lstrip()  # the usual one-line event, without splitting it
    lines = [line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")]
    return b"\n".join(lines) if lines else None


class MergingChunkStream:
    """Stands in for the SDK's ``AsyncStream[ChatCompletionChunk]`` over the same HTTP response.

    A pump task reads and decodes the body as fast as it arrives (a network read rarely holds more
    than one SSE event, so read sizes say nothing about lag); the consumer takes everything queued
    since its last pull, which is exactly "merge while the reader is behind"."""

    def __init__(self, stream: AsyncStream[ChatCompletionChunk]) -> None:
        self._stream = stream
        self.response: httpx.Response = stream.response
        self._queue: list[dict[str, Any]] = []
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
        await self._stream.close()

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
                done = self._decode(events)
                self._ready.set()
                if done:
                    break
        except Exception as exc:  # handed to the consumer after what was decoded before it
            self._error = exc
        finally:
            self._ended = True
            self._ready.set()

    async def _chunks(self) -> AsyncIterator[ChatCompletionChunk]:
        self._pump_task = asyncio.create_task(self._pump())
        while True:
            await self._ready.wait()
            self._ready.clear()
            taken, self._queue = self._queue, []
            for payload in merge_text_deltas(taken):
                yield construct_type(type_=ChatCompletionChunk, value=payload)
            if self._ended and not self._queue:
                if self._error is not None:
                    raise self._error
                return

    def _decode(self, events: list[bytes]) -> bool:
        """Queue the events' payloads; True at ``[DONE]``. Raises on undecodable data or an error event."""
        for event in events:
            data = _event_data(event)
            if data is None:
                continue  # comments, keep-alives, event names
            if data.startswith(b"[DONE]"):
                return True
            payload = orjson.loads(data)  # its JSONDecodeError is json's: it surfaces as the SDK's would
            if isinstance(payload, dict) and payload.get("error"):
                error = payload["error"]
                message = error.get("message") if isinstance(error, dict) else None
                raise APIError(message=message or "An error occurred during streaming",
                               request=self.response.request, body=error)
            self._queue.append(payload)
        return False


_REQUEST_OPTIONS = ("extra_headers", "extra_query", "extra_body", "timeout")


class LeanCompletions(AsyncCompletions):
    """``chat.completions`` whose streamed ``create`` posts the body without the SDK's type walk."""

    async def create(self, **params: Any) -> Any:  # type: ignore[override]
        if params.get("stream") is not True:
            return await super().create(**params)
        options = {name: params.pop(name) for name in _REQUEST_OPTIONS if name in params}
        body = {key: value for key, value in params.items() if is_given(value)}
        return await self._post(
            "/chat/completions",
            body=body,
            options=make_request_options(**options, security={"bearer_auth": True}),
            cast_to=ChatCompletion,
            stream=True,
            stream_cls=AsyncStream[ChatCompletionChunk],
        )


class _LeanChat(AsyncChat):
    @cached_property
    def completions(self) -> AsyncCompletions:
        return LeanCompletions(self._client)


class LeanAsyncOpenAI(AsyncOpenAI):
    """The SDK client with ``LeanCompletions`` under ``chat.completions`` (its copies keep the class)."""

    @cached_property
    def chat(self) -> AsyncChat:
        return _LeanChat(self)


class LeanOpenAIChatModel(OpenAIChatModel):
    """``OpenAIChatModel`` whose streamed replies are read by ``MergingChunkStream``."""

    async def _completions_create(self, messages: Any, stream: bool, model_settings: Any,
                                  model_request_parameters: Any) -> Any:
        response = await super()._completions_create(messages, stream, model_settings,
                                                     model_request_parameters)  # type: ignore[call-overload]
        if stream and isinstance(response, AsyncStream):
            return MergingChunkStream(response)
        return response


def build_chat_model(spec: ModelSpec, *, http_client: Any = None) -> Model:
    """The model a chat run uses: the lean reader for OpenAI-compatible endpoints, else the default."""
    if spec.provider != "openai":
        return build_model(spec, http_client=http_client)
    client = LeanAsyncOpenAI(
        base_url=spec.base_url or "https://api.openai.com/v1",
        api_key=spec.api_key or "not-needed",
        http_client=http_client,
    )
    return LeanOpenAIChatModel(spec.model, provider=OpenAIProvider(openai_client=client))
