"""The stream reader for OpenAI-compatible models (``llm.lean_openai``): its SSE framing, turning decoded
chunks into the SDK's type, merging deltas, the order in which it hands chunks on, and that pydantic-ai's
OpenAI model really reads through it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import orjson
import pytest
from openai import APIError
from openai.types.chat import ChatCompletionChunk
from pydantic_ai.messages import ModelRequest, PartDeltaEvent, TextPart
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from agentloft.llm import lean_openai
from agentloft.llm.lean_openai import (
    MERGE_LIMIT,
    EventSplitter,
    LeanAsyncOpenAI,
    MergingChunkStream,
    chunk_of,
    event_data,
    merge_deltas,
)
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, sse_body
from tests.fakes.sse import cut


def _chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}


def test_a_well_formed_chunk_is_the_same_object_the_sdk_builds() -> None:
    for payload in [
        _chunk({"role": "assistant", "content": "hi"}),
        _chunk({"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                "function": {"name": "f", "arguments": "{\"a\":"}}]}),
        _chunk({}, "stop", usage={"prompt_tokens": 3, "completion_tokens": 4, "total_tokens": 7}),
        _chunk({"content": "x", "reasoning_content": "thinking"}),  # a provider's extra field is kept
    ]:
        assert chunk_of(payload) == ChatCompletionChunk.construct(**payload)
    built = chunk_of(_chunk({"content": "x", "reasoning_content": "thinking"}))
    assert getattr(built.choices[0].delta, "reasoning_content", None) == "thinking"


def test_an_odd_chunk_is_still_read_leniently() -> None:
    """Some OpenAI-compatible servers leave fields out or send values outside the SDK's enums."""
    odd = {"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "eos"}]}
    built = chunk_of(odd)
    assert isinstance(built, ChatCompletionChunk)
    assert built.choices[0].delta.content == "hi" and built.choices[0].finish_reason == "eos"


# --- framing ------------------------------------------------------------------------------------------


def _frames(body: bytes, size: int) -> list[bytes | None]:
    splitter = EventSplitter()
    events = [e for piece in cut([body], size) for e in splitter.feed(piece)]
    return [event_data(e) for e in events]


@pytest.mark.parametrize("size", [1, 2, 7, 1000])
def test_events_come_out_the_same_however_the_bytes_are_cut(size: int) -> None:
    body = (b": keep-alive\r\n\r\n"
            b"data: {\"a\": 1}\r\n\r\n"
            b"event: update\ndata: {\"b\":\ndata: 2}\n\n"
            b"data:{\"c\": \"\xc3\xa9\"}\r\r"
            b"data: [DONE]\n\n"
            b"data: {\"unterminated\": 1}")
    assert _frames(body, size) == [None, b'{"a": 1}', b'{"b":\n2}', b'{"c": "\xc3\xa9"}', b"[DONE]"]


# --- merging ------------------------------------------------------------------------------------------


def _contents(merged: list[dict[str, Any]]) -> list[Any]:
    return [m["choices"][0]["delta"].get("content") if m.get("choices") else "usage" for m in merged]


def test_text_deltas_merge_and_everything_else_keeps_its_place() -> None:
    payloads = [_chunk({"role": "assistant", "content": "a"}), _chunk({"content": "b"}), _chunk({"content": "c"}),
                _chunk({"tool_calls": [{"index": 0, "id": "t", "type": "function",
                                        "function": {"name": "f", "arguments": ""}}]}),
                _chunk({"content": "d"}), _chunk({}, "stop")]
    merged = merge_deltas(payloads)
    assert _contents(merged) == ["abc", None, "d", None]
    assert merged[-1]["choices"][0]["finish_reason"] == "stop"


def test_reasoning_deltas_merge_per_field_and_never_with_text() -> None:
    payloads = [_chunk({"reasoning_content": "a"}), _chunk({"reasoning_content": "b"}),
                _chunk({"reasoning": "c"}), _chunk({"content": "d"}), _chunk({"content": "e"})]
    merged = merge_deltas(payloads)
    assert [m["choices"][0]["delta"] for m in merged] == [
        {"reasoning_content": "ab"}, {"reasoning": "c"}, {"content": "de"}]


def test_a_thinking_tag_is_never_merged_with_the_text_around_it() -> None:
    pieces = ["<think>", "I ", "ponder", "</think>", "\n\n", "The ", "answer", "<thinking>", "x", "</thinking>", "y"]
    merged = merge_deltas([_chunk({"content": p}) for p in pieces])
    assert _contents(merged) == ["<think>", "I ponder", "</think>", "\n\n", "The answer", "<thinking>", "x",
                                 "</thinking>", "y"]


def test_whitespace_alone_never_starts_a_merged_run() -> None:
    """pydantic-ai drops a part's leading whitespace per delta for some models: a whitespace-only delta
    stays on its own, whatever follows it; after text it may join."""
    merged = merge_deltas([_chunk({"content": p}) for p in ["\n\n", "Four", " ", "\n", "five"]])
    assert _contents(merged) == ["\n\n", "Four \nfive"]


# --- the stream ---------------------------------------------------------------------------------------


def _sse(*payloads: dict[str, Any] | str) -> bytes:
    return b"".join(b"data: " + (p.encode() if isinstance(p, str) else orjson.dumps(p)) + b"\n\n" for p in payloads)


async def _read_all(body: bytes) -> tuple[list[str | None], BaseException | None]:
    """Every chunk's text as the stream hands them on (the whole body arrives in one network read)."""
    request = httpx2.Request("POST", "http://model.test/v1/chat/completions")
    stream = MergingChunkStream(httpx2.Response(200, stream=httpx2.ByteStream(body), request=request))
    texts: list[str | None] = []
    try:
        async for chunk in stream:
            texts.append(chunk.choices[0].delta.content if chunk.choices else None)
    except Exception as exc:
        return texts, exc
    finally:
        await stream.close()
    return texts, None


async def test_the_first_words_go_out_alone_and_the_backlog_is_merged_in_slices() -> None:
    words = [_chunk({"content": f"w{i} "}) for i in range(300)]
    body = _sse(_chunk({"role": "assistant", "content": ""}), *words, _chunk({}, "stop"), "[DONE]")
    texts, error = await _read_all(body)
    assert error is None
    assert texts[:2] == ["", "w0 "]  # the role chunk, then the first words on their own
    merged = [t for t in texts[2:] if t]
    assert "".join(merged) == "".join(f"w{i} " for i in range(1, 300))
    assert 1 < len(merged) <= 1 + 299 // MERGE_LIMIT + 1  # merged, but in slices of at most MERGE_LIMIT


class CountedBody(httpx2.AsyncByteStream):
    """A body of ``pieces``, each one network read, that counts how many were read so far."""

    def __init__(self, *pieces: bytes) -> None:
        self.pieces = pieces
        self.read = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self.pieces:
            self.read += 1
            yield piece

    async def aclose(self) -> None:
        pass


async def test_the_first_words_are_handed_on_before_the_backlog_is_read() -> None:
    """A fast model's backlog comes in reads of hundreds of events that are parsed without a pause: the
    first words must not wait for them."""
    backlog = _sse(*(_chunk({"content": f"w{i} "}) for i in range(300)), _chunk({}, "stop"), "[DONE]")
    body = CountedBody(_sse(_chunk({"role": "assistant", "content": ""})), _sse(_chunk({"content": "first "})),
                       backlog)
    request = httpx2.Request("POST", "http://model.test/v1/chat/completions")
    stream = MergingChunkStream(httpx2.Response(200, stream=body, request=request))
    texts: list[str | None] = []
    reads_at_first_words = 0
    async for chunk in stream:
        texts.append(chunk.choices[0].delta.content if chunk.choices else None)
        if texts[-1] == "first ":
            reads_at_first_words = body.read
    await stream.close()
    assert reads_at_first_words == 2
    assert "".join(t or "" for t in texts) == "first " + "".join(f"w{i} " for i in range(300))


async def test_an_error_event_mid_stream_comes_after_the_text_before_it() -> None:
    body = _sse(_chunk({"content": "one "}), _chunk({"content": "two "}), _chunk({"content": "three"}),
                {"error": {"message": "the model fell over"}}, _chunk({"content": "never"}))
    texts, error = await _read_all(body)
    assert "".join(t or "" for t in texts) == "one two three"
    assert isinstance(error, APIError) and error.message == "the model fell over"


class HeldBody(httpx2.AsyncByteStream):
    """A body that sends ``head``, then holds the connection open until ``release`` is set (or forever)."""

    def __init__(self, head: bytes) -> None:
        self.head = head
        self.release = asyncio.Event()
        self.finished = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        yield self.head
        await self.release.wait()
        self.finished = True

    async def aclose(self) -> None:
        pass


async def _read_held(body: HeldBody) -> tuple[list[str | None], httpx2.Response]:
    request = httpx2.Request("POST", "http://model.test/v1/chat/completions")
    response = httpx2.Response(200, stream=body, request=request)
    stream = MergingChunkStream(response)
    texts = [chunk.choices[0].delta.content async for chunk in stream]
    await stream.close()  # returns although the body has not ended
    return texts, response


async def test_the_stream_ends_at_done_and_the_body_is_read_to_its_end_after() -> None:
    """A body that ends a while after ``[DONE]`` (the last chunk of a chunked body, still on its way)
    delays nothing, and is still read to its end so its connection goes back to the pool."""
    body = HeldBody(_sse(_chunk({"content": "all "}), _chunk({"content": "done"}), "[DONE]"))
    texts, response = await _read_held(body)
    assert texts == ["all ", "done"] and not body.finished and not response.is_closed
    body.release.set()
    await _drained()
    assert body.finished and response.is_closed


async def test_a_body_that_goes_on_after_done_is_cut_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(lean_openai, "DRAIN_S", 0.05)
    body = HeldBody(_sse(_chunk({"content": "all"}), "[DONE]"))
    texts, response = await _read_held(body)
    assert texts == ["all"]
    await _drained()  # ends after DRAIN_S, without the body's end
    assert response.is_closed and not body.finished


async def _drained() -> None:
    """Wait for the readers still draining a body after their stream was closed."""
    pending = list(lean_openai._DRAINS)
    assert pending, "no body is being drained"
    await asyncio.wait(pending, timeout=10)


async def test_pydantic_ai_reads_streamed_replies_through_the_lean_reader(
    fake_model: FakeModel, fake_model_server: FakeModelServer
) -> None:
    """The contract the reader rests on: pydantic-ai's ``OpenAIChatModel`` asks the client it is given for
    ``chat.completions.create(stream=True)``, which ``LeanAsyncOpenAI`` routes to the reader. A backlog
    (the whole body in one write) then reaches pydantic-ai as a few merged deltas instead of one each."""
    pieces = [f"w{i} " for i in range(60)]
    fake_model.push(Step(raw=sse_body({"role": "assistant", "content": ""}, *({"content": p} for p in pieces)),
                         writes="whole"))
    client = LeanAsyncOpenAI(base_url=fake_model_server.base_url, api_key="k", http_client=httpx2.AsyncClient())
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    async with model.request_stream([ModelRequest.user_text_prompt("hi")], None,
                                    ModelRequestParameters()) as streamed:
        deltas = [e async for e in streamed if isinstance(e, PartDeltaEvent)]
        assert streamed.get().parts == [TextPart(content="".join(pieces))]
    assert 0 < len(deltas) < 10
    await client.close()


def _renamed_or_reformatted(annotation: Any, seen: set[int]) -> list[str]:
    """Where in a parameter type the SDK's transform would change a value: fields annotated with its
    ``PropertyInfo`` (an alias, a date or file format). Walks TypedDicts, unions and containers."""
    from typing import get_args, get_type_hints

    from openai._utils._transform import PropertyInfo
    from typing_extensions import is_typeddict

    if id(annotation) in seen:
        return []
    seen.add(id(annotation))
    found: list[str] = []
    if is_typeddict(annotation):
        for name, hint in get_type_hints(annotation, include_extras=True).items():
            if any(isinstance(m, PropertyInfo) for m in getattr(hint, "__metadata__", ())):
                found.append(f"{annotation.__name__}.{name}")
            found += _renamed_or_reformatted(hint, seen)
    for arg in get_args(annotation):
        found += _renamed_or_reformatted(arg, seen)
    return found


def test_the_installed_openai_sdk_is_the_pinned_one() -> None:
    """The transform skipped for ``messages`` and ``tools`` is the SDK's internal behaviour, checked below
    for the pinned version: pyproject.toml pins it exactly, so an upgrade comes with this check run."""
    import re
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    deps = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    assert [d for d in deps if re.match(r"openai\b", d)] == [f"openai=={version('openai')}"]


def test_the_fields_sent_as_given_are_ones_the_sdk_would_not_change() -> None:
    """``messages`` and ``tools`` skip the SDK's transform (see ``lean_openai._AS_IS``): that is only right
    while no type in them renames or reformats a field. This fails when an SDK upgrade adds one."""
    from typing import get_type_hints

    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    hints = get_type_hints(CompletionCreateParamsStreaming, include_extras=True)
    for field in lean_openai._AS_IS:
        assert _renamed_or_reformatted(hints[field], set()) == []


async def test_messages_and_tools_reach_the_model_as_pydantic_ai_made_them(
    fake_model: FakeModel, fake_model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """...without the SDK walking them: that walk grew with the conversation (6 ms at 40 messages)."""
    from openai.resources.chat.completions import completions
    from pydantic_ai.tools import ToolDefinition

    walked: list[Any] = []
    transform = completions.async_maybe_transform

    async def recorded(data: Any, *args: Any, **kwargs: Any) -> Any:
        walked.append(data)
        return await transform(data, *args, **kwargs)

    monkeypatch.setattr(completions, "async_maybe_transform", recorded)
    fake_model.push(Step(text="ok"))
    client = LeanAsyncOpenAI(base_url=fake_model_server.base_url, api_key="k", http_client=httpx2.AsyncClient())
    model = lean_openai.LeanChatModel("m", provider=OpenAIProvider(openai_client=client))
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    params = ModelRequestParameters(function_tools=[ToolDefinition(name="find", parameters_json_schema=schema)])
    async with model.request_stream([ModelRequest.user_text_prompt("hi")], None, params) as streamed:
        async for _ in streamed:
            pass
    sent = fake_model.requests[-1]
    assert sent["messages"] == [{"role": "user", "content": "hi"}]
    assert [t["function"]["name"] for t in sent["tools"]] == ["find"]
    assert sent["tools"][0]["function"]["parameters"]["properties"] == {"q": {"type": "string"}}
    assert sent["stream"] is True and sent["model"] == "m"
    assert len(walked) == 1 and walked[0]["messages"] == [] and not isinstance(walked[0].get("tools"), list)
    await client.close()
