"""The lean stream reader's pieces (``chat.lean_openai``) that do not need a server: turning decoded chunks
into the SDK's type, merging text deltas, and the order in which a stream hands its chunks on."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
from openai import APIError
from openai._models import construct_type
from openai.types.chat import ChatCompletionChunk

from agentloft.llm.lean_openai import MERGE_LIMIT, MergingChunkStream, chunk_of, merge_text_deltas


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
        built = chunk_of(payload)
        assert built == construct_type(type_=ChatCompletionChunk, value=payload)
    assert chunk_of(_chunk({"content": "x", "reasoning_content": "thinking"})).choices[0].delta.reasoning_content \
        == "thinking"  # type: ignore[attr-defined]


def test_an_odd_chunk_is_still_read_leniently() -> None:
    """Some OpenAI-compatible servers leave fields out or send values outside the SDK's enums."""
    odd = {"id": "x", "model": "m", "choices": [{"index": 0, "delta": {"content": "hi"}, "finish_reason": "eos"}]}
    built = chunk_of(odd)
    assert isinstance(built, ChatCompletionChunk)
    assert built.choices[0].delta.content == "hi" and built.choices[0].finish_reason == "eos"


def test_text_deltas_merge_and_everything_else_keeps_its_place() -> None:
    payloads = [_chunk({"role": "assistant", "content": "a"}), _chunk({"content": "b"}), _chunk({"content": "c"}),
                _chunk({"tool_calls": [{"index": 0, "id": "t", "type": "function",
                                        "function": {"name": "f", "arguments": ""}}]}),
                _chunk({"content": "d"}), _chunk({}, "stop")]
    merged = merge_text_deltas(payloads)
    assert [m["choices"][0]["delta"].get("content") for m in merged] == ["abc", None, "d", None]
    assert merged[-1]["choices"][0]["finish_reason"] == "stop"


def _texts(merged: list[dict[str, Any]]) -> list[Any]:
    return [m["choices"][0]["delta"].get("content") for m in merged]


def test_a_thinking_tag_is_never_merged_with_the_text_around_it() -> None:
    pieces = ["<think>", "I ", "ponder", "</think>", "\n\n", "The ", "answer", "<thinking>", "x", "</thinking>", "y"]
    merged = merge_text_deltas([_chunk({"content": p}) for p in pieces])
    assert _texts(merged) == ["<think>", "I ponder", "</think>", "\n\n", "The answer", "<thinking>", "x",
                              "</thinking>", "y"]


def test_whitespace_alone_never_starts_a_merged_run() -> None:
    """pydantic-ai drops a part's leading whitespace per delta for some models: a whitespace-only delta
    stays on its own, whatever follows it; after text it may join."""
    merged = merge_text_deltas([_chunk({"content": p}) for p in ["\n\n", "Four", " ", "\n", "five"]])
    assert _texts(merged) == ["\n\n", "Four \nfive"]


def _sse(*payloads: dict[str, Any] | str) -> bytes:
    return b"".join(b"data: " + (p.encode() if isinstance(p, str) else orjson.dumps(p)) + b"\n\n" for p in payloads)


async def _read_all(body: bytes) -> tuple[list[str | None], BaseException | None]:
    """Every chunk's text as the stream hands them on (the whole body arrives in one network read)."""
    request = httpx.Request("POST", "http://model.test/v1/chat/completions")
    stream = MergingChunkStream(httpx.Response(200, stream=httpx.ByteStream(body), request=request))
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


async def test_an_error_event_mid_stream_comes_after_the_text_before_it() -> None:
    body = _sse(_chunk({"content": "one "}), _chunk({"content": "two "}), _chunk({"content": "three"}),
                {"error": {"message": "the model fell over"}}, _chunk({"content": "never"}))
    texts, error = await _read_all(body)
    assert "".join(t or "" for t in texts) == "one two three"
    assert isinstance(error, APIError) and error.message == "the model fell over"
