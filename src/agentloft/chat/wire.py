"""The UI message stream's wire format (Vercel AI SDK UI Message Stream v1 over SSE), in one place.

A run's chunks travel as SSE frames (``data: <chunk JSON>\\n\\n``) through the stream buffers, so every
writer of a buffer (the engine, the end of a cut-off run, an A2A task's panel, a remote agent's reply)
and every reader that looks inside the frames (the A2A side panel's ending) speaks it through this
module: how a chunk is framed, the ``error`` frame, the ``[DONE]`` terminator, the response headers,
and reading frames back. Nothing else writes ``data: `` by hand or sniffs a frame's bytes. Callers that
pass on only the reply's text (the A2A server, the OpenAI-compatible API) read no frames at all: they
take the engine's chunks as the run makes them (``chat.relay``).

The chunks themselves are pydantic-ai's (``pydantic_ai.ui.vercel_ai.response_types``), encoded for the
SDK version that has approval chunks (``tool-approval-request`` needs 6).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic_ai.ui.vercel_ai.response_types import BaseChunk, ErrorChunk
from pydantic_core import PydanticSerializationError

from agentloft.core.db import whole_characters

SDK_VERSION = 6  # the Vercel AI SDK version the chunks are encoded for
MEDIA_TYPE = "text/event-stream"
# What every response carrying the stream sends: the protocol's marker, and no caching or proxy
# buffering (a proxy that held the frames back would hold back the reply).
HEADERS: dict[str, str] = {
    "x-vercel-ai-ui-message-stream": "v1",
    "Cache-Control": "no-cache",
    "X-Accel-Buffering": "no",
}
# A response that replays the run from its start (a resumed chat stream, every A2A panel stream).
RESUMED: dict[str, str] = {"X-Stream-Resume": "true"}
DONE = "data: [DONE]\n\n"  # the stream's terminator, after the ``finish`` chunk (or an ``abort``, an ``error``)
_PREFIX = "data: "


def frame(chunk: BaseChunk) -> str:
    """The SSE frame of one chunk. Raises ``PydanticSerializationError`` for text UTF-8 cannot encode
    (a lone surrogate); ``whole_frame`` mends that."""
    return f"{_PREFIX}{chunk.encode(SDK_VERSION)}\n\n"


def whole_frame(chunk: BaseChunk) -> tuple[str, BaseChunk]:
    """The chunk's SSE frame, and the chunk as framed: with any lone surrogate (half an emoji from a model
    or a tool, which UTF-8 cannot encode) replaced by U+FFFD, so that a reply streams and saves as
    shown. Checked only when encoding fails: the common case pays nothing."""
    try:
        return frame(chunk), chunk
    except PydanticSerializationError:
        whole = type(chunk).model_validate(whole_characters(chunk.model_dump()))
        return frame(whole), whole


def error_frame(message: str) -> str:
    """The frame of an ``error`` chunk: a failure a reader of the stream shows as ``message``."""
    return frame(ErrorChunk(error_text=message))


def chunks(frames: str) -> Iterator[dict[str, Any]]:
    """The chunks in buffered SSE frames, as JSON objects, in order; the terminator and anything that
    is not a chunk's frame are skipped."""
    for line in frames.splitlines():
        if not line.startswith(_PREFIX):
            continue
        try:
            chunk = json.loads(line[len(_PREFIX):])
        except ValueError:  # ``[DONE]``
            continue
        if isinstance(chunk, dict):
            yield chunk


def has_error(frames: str) -> bool:
    """Whether the frames hold an ``error`` chunk."""
    return any(c.get("type") == "error" for c in chunks(frames))


def has_done(frames: str) -> bool:
    """Whether the frames hold the stream's terminator."""
    return any(line == _PREFIX + "[DONE]" for line in frames.splitlines())
