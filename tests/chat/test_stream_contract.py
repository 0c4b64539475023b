"""The private members of pydantic-ai's ``VercelAIEventStream`` that ``chat/stream.py`` uses:
``_streamed_call_parts`` and ``_tool_input_available_chunk`` (to announce a tool call whose input
streamed before the run failed) and ``_finish_reason`` (to end a failed run with ``finishReason:
error``). pydantic-ai is pinned exactly for them (pyproject.toml). The behaviour is checked through the
public ``transform_stream``: if an upgrade renamed ``_finish_reason``, our ``on_error`` would set an
attribute nobody reads and a failed run would stream ``finishReason: stop`` without any error; this test
fails instead."""

from __future__ import annotations

import asyncio
import re
import tomllib
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic_ai.messages import PartDeltaEvent, PartEndEvent, PartStartEvent, TextPart, TextPartDelta, ToolCallPart
from pydantic_ai.ui.vercel_ai.response_types import (
    ErrorChunk,
    FinishChunk,
    ToolInputAvailableChunk,
    ToolInputStartChunk,
)

from agentloft.chat.stream import EngineEventStream

ROOT = Path(__file__).resolve().parents[2]


def test_pydantic_ai_is_pinned_exactly_to_the_installed_version() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = [m.group(1) for d in deps if (m := re.fullmatch(r"pydantic-ai-slim(?:\[[^\]]*\])?==([\w.]+)", d))]
    assert pins == [version("pydantic-ai-slim")]


async def _events(call: ToolCallPart) -> AsyncIterator[Any]:
    """A response that streams some text and a tool call's input, then breaks off (the provider's
    connection drops) before the call is ever made."""
    yield PartStartEvent(index=0, part=TextPart(content="Let me look"))
    yield PartDeltaEvent(index=0, delta=TextPartDelta(content_delta=" that up."))
    yield PartEndEvent(index=0, part=TextPart(content="Let me look that up."))
    yield PartStartEvent(index=1, part=call)
    yield PartEndEvent(index=1, part=call)
    raise ConnectionError("provider went away")


async def _chunks() -> list[Any]:
    call = ToolCallPart(tool_name="lookup", args={"q": "tea"}, tool_call_id="call-1")
    stream = EngineEventStream(None, sdk_version=6, server_message_id="m1", max_steps=5)
    return [chunk async for chunk in stream.transform_stream(_events(call))]


def test_a_failed_run_announces_the_streamed_call_and_finishes_as_an_error() -> None:
    chunks = asyncio.run(_chunks())
    kinds = [type(c) for c in chunks]
    # the call's input was streamed: the page learns it is complete before the error (no call stuck in
    # "input-streaming"), which is what _streamed_call_parts and _tool_input_available_chunk give
    available = [c for c in chunks if isinstance(c, ToolInputAvailableChunk)]
    assert [(c.tool_call_id, c.tool_name, c.input) for c in available] == [("call-1", "lookup", {"q": "tea"})]
    assert kinds.index(ToolInputStartChunk) < kinds.index(ToolInputAvailableChunk) < kinds.index(ErrorChunk)
    # our wording (llm.failures), and the finish reason our on_error set through _finish_reason
    (error,) = [c for c in chunks if isinstance(c, ErrorChunk)]
    assert error.error_text.startswith("The reply failed")
    (finish,) = [c for c in chunks if isinstance(c, FinishChunk)]
    assert finish.finish_reason == "error"
