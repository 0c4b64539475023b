"""The lean stream reader's pieces (``chat.lean_openai``) that do not need a server: turning decoded chunks
into the SDK's type, and merging text deltas."""

from __future__ import annotations

from typing import Any

from openai._models import construct_type
from openai.types.chat import ChatCompletionChunk

from agentloft.chat.lean_openai import chunk_of, merge_text_deltas


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
