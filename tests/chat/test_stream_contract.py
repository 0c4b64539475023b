"""What ``chat/stream.py`` and ``chat/steps.py`` rely on in pydantic-ai's ``VercelAIEventStream``, checked through
its public ``transform_stream``: on a failure its own ``on_error`` announces a tool call whose input streamed and
ends the reply with ``finishReason: error`` (we only replace its ``error`` chunk); at the end it reads the turn's
``output`` and last ``response`` from the ``AgentRunResultEvent`` (``chat.steps.StepsResult``, made without an
agent run) for the approval requests and the message's metadata; the loop's ``StepLimitReached`` reaches our
``handle_custom_event``. pydantic-ai is pinned exactly (pyproject.toml), so an upgrade that changes any of this
fails here first."""

from __future__ import annotations

import asyncio
import re
import tomllib
from collections.abc import AsyncIterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

from pydantic_ai import DeferredToolRequests
from pydantic_ai.messages import (
    DeferredToolRequestsEvent,
    FunctionToolCallEvent,
    ModelResponse,
    PartDeltaEvent,
    PartEndEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
)
from pydantic_ai.run import AgentRunResultEvent
from pydantic_ai.ui.vercel_ai.response_types import (
    DataChunk,
    ErrorChunk,
    FinishChunk,
    MessageMetadataChunk,
    ToolApprovalRequestChunk,
    ToolInputAvailableChunk,
    ToolInputStartChunk,
)

from agentloft.chat.steps import StepLimitReached, StepsResult
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
    # "input-streaming"), which the encoder's own on_error gives
    available = [c for c in chunks if isinstance(c, ToolInputAvailableChunk)]
    assert [(c.tool_call_id, c.tool_name, c.input) for c in available] == [("call-1", "lookup", {"q": "tea"})]
    assert kinds.index(ToolInputStartChunk) < kinds.index(ToolInputAvailableChunk) < kinds.index(ErrorChunk)
    # our wording (llm.failures) in the one error chunk, and the encoder's finish reason for a failure
    (error,) = [c for c in chunks if isinstance(c, ErrorChunk)]
    assert error.error_text.startswith("The reply failed")
    (finish,) = [c for c in chunks if isinstance(c, FinishChunk)]
    assert finish.finish_reason == "error"


async def _ended(*events: Any) -> list[Any]:
    async def source() -> AsyncIterator[Any]:
        for event in events:
            yield event

    stream = EngineEventStream(None, sdk_version=6, server_message_id="m1", max_steps=3)
    return [chunk async for chunk in stream.transform_stream(source())]


def test_the_turns_result_brings_its_approval_requests_and_finish_reason() -> None:
    call = ToolCallPart(tool_name="guard", args={"a": 1}, tool_call_id="ap1")
    response = ModelResponse(parts=[call], finish_reason="tool_call")
    output = DeferredToolRequests(approvals=[call])
    chunks = asyncio.run(_ended(PartStartEvent(index=0, part=call), PartEndEvent(index=0, part=call),
                                FunctionToolCallEvent(call, args_valid=True), DeferredToolRequestsEvent(output),
                                AgentRunResultEvent(result=StepsResult(output=output, last_response=response))))
    kinds = [type(c) for c in chunks]
    (approval,) = [c for c in chunks if isinstance(c, ToolApprovalRequestChunk)]
    assert (approval.approval_id, approval.tool_call_id) == ("ap1", "ap1")
    (meta,) = [c for c in chunks if isinstance(c, MessageMetadataChunk)]
    assert meta.message_metadata["pydantic_ai"]["timestamp"]
    assert kinds.index(MessageMetadataChunk) < kinds.index(ToolApprovalRequestChunk) < kinds.index(FinishChunk)
    (finish,) = [c for c in chunks if isinstance(c, FinishChunk)]
    assert finish.finish_reason == "tool-calls"


def test_the_step_limit_ends_the_reply_with_a_notice_not_an_error() -> None:
    chunks = asyncio.run(_ended(PartStartEvent(index=0, part=TextPart(content="working")),
                                PartEndEvent(index=0, part=TextPart(content="working")), StepLimitReached(steps=3)))
    (notice,) = [c for c in chunks if isinstance(c, DataChunk)]
    assert notice.type == "data-notice" and notice.data["code"] == "max_steps" and notice.data["steps"] == 3
    assert not [c for c in chunks if isinstance(c, ErrorChunk)]
    (finish,) = [c for c in chunks if isinstance(c, FinishChunk)]
    assert finish.finish_reason is None
