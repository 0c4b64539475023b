"""What a turn showed the user, rebuilt from the chunks it streamed: Vercel AI SDK UIMessage parts.

Saving the parts the client saw (rather than re-deriving them from the model history) means a reloaded
page renders exactly what streamed, including failed tool calls, approval states and ``data-*`` parts,
and a run cut short still has everything up to the cut. One exception: a large file a tool returned is
kept as its size only (``kept_output``).
"""

from __future__ import annotations

from typing import Any

from pydantic_ai.ui.vercel_ai.response_types import (
    BaseChunk,
    DataChunk,
    ErrorChunk,
    ReasoningDeltaChunk,
    ReasoningEndChunk,
    ReasoningStartChunk,
    StartStepChunk,
    TextDeltaChunk,
    TextEndChunk,
    TextStartChunk,
    ToolApprovalRequestChunk,
    ToolInputAvailableChunk,
    ToolInputErrorChunk,
    ToolInputStartChunk,
    ToolOutputAvailableChunk,
    ToolOutputDeniedChunk,
    ToolOutputErrorChunk,
)

from agentloft.tools.base import base64_size

# The most base64 characters of one file (a tool's image) a saved message keeps: the live stream shows the
# whole file, a reloaded page shows a note with its size instead of a larger one. The model's history
# keeps the file either way; this bounds the rows every page load and message listing reads.
MAX_KEPT_FILE_CHARS = 256 * 1024


def kept_output(output: Any) -> Any:
    """A tool output as a saved message keeps it: files (``[result, file...]``, see ``chat.toolset``)
    larger than ``MAX_KEPT_FILE_CHARS`` lose their data and say how large they were."""
    if not isinstance(output, list):
        return output
    return [_kept_item(item) for item in output]


def _kept_item(item: Any) -> Any:
    if not (isinstance(item, dict) and item.get("kind") == "binary"):
        return item
    data = item.get("data")
    if not isinstance(data, str) or len(data) <= MAX_KEPT_FILE_CHARS:
        return item
    return {**item, "data": None, "omitted": True, "size": base64_size(data)}


class PartsCollector:
    """Feed every chunk of a turn (and of its resumed runs); read ``parts`` / ``text`` at any time."""

    def __init__(self, parts: list[dict[str, Any]] | None = None) -> None:
        self._parts: list[dict[str, Any]] = [dict(p) for p in parts or []]
        self._texts: dict[int, list[str]] = {}  # index of a streaming text part -> its pieces
        self._open: dict[str, int] = {}  # chunk id -> part index (text / reasoning)
        self._tools: dict[str, int] = {
            p["toolCallId"]: i for i, p in enumerate(self._parts) if "toolCallId" in p
        }
        self.error: str | None = None

    def feed(self, chunk: BaseChunk) -> None:
        if isinstance(chunk, TextDeltaChunk | ReasoningDeltaChunk):
            index = self._open.get(chunk.id)
            if index is not None:
                self._texts[index].append(chunk.delta)
            return
        handler = _HANDLERS.get(type(chunk))
        if handler is not None:
            handler(self, chunk)
        elif isinstance(chunk, DataChunk) and not chunk.transient:
            self._parts.append({"type": chunk.type, "data": chunk.data})

    # --- handlers -------------------------------------------------------------------------------

    def _start_step(self, chunk: StartStepChunk) -> None:
        self._parts.append({"type": "step-start"})

    def _text_start(self, chunk: TextStartChunk | ReasoningStartChunk) -> None:
        kind = "text" if isinstance(chunk, TextStartChunk) else "reasoning"
        self._parts.append({"type": kind, "text": "", "state": "streaming"})
        index = len(self._parts) - 1
        self._open[chunk.id] = index
        self._texts[index] = []

    def _text_end(self, chunk: TextEndChunk | ReasoningEndChunk) -> None:
        index = self._open.pop(chunk.id, None)
        if index is not None:
            self._flush(index)
            self._parts[index]["state"] = "done"

    def _tool(self, tool_call_id: str, tool_name: str | None = None) -> dict[str, Any]:
        index = self._tools.get(tool_call_id)
        if index is None:
            self._parts.append({"type": f"tool-{tool_name or 'unknown'}", "toolCallId": tool_call_id,
                                "state": "input-streaming", "input": None})
            index = self._tools[tool_call_id] = len(self._parts) - 1
        return self._parts[index]

    def _tool_start(self, chunk: ToolInputStartChunk) -> None:
        self._tool(chunk.tool_call_id, chunk.tool_name)

    def _tool_input(self, chunk: ToolInputAvailableChunk) -> None:
        part = self._tool(chunk.tool_call_id, chunk.tool_name)
        part.update(state="input-available", input=chunk.input)

    def _tool_input_error(self, chunk: ToolInputErrorChunk) -> None:
        part = self._tool(chunk.tool_call_id, chunk.tool_name)
        part.update(state="output-error", input=chunk.input, errorText=chunk.error_text)

    def _approval(self, chunk: ToolApprovalRequestChunk) -> None:
        part = self._tool(chunk.tool_call_id)
        part.update(state="approval-requested", approval={"id": chunk.approval_id})

    def _output(self, chunk: ToolOutputAvailableChunk) -> None:
        self._tool(chunk.tool_call_id).update(state="output-available", output=kept_output(chunk.output))

    def _output_error(self, chunk: ToolOutputErrorChunk) -> None:
        self._tool(chunk.tool_call_id).update(state="output-error", errorText=chunk.error_text)

    def _denied(self, chunk: ToolOutputDeniedChunk) -> None:
        self._tool(chunk.tool_call_id).update(state="output-denied")

    def _error(self, chunk: ErrorChunk) -> None:
        self.error = chunk.error_text

    # --- reading --------------------------------------------------------------------------------

    def _flush(self, index: int) -> None:
        pieces = self._texts.get(index)
        if pieces:
            self._parts[index]["text"] += "".join(pieces)
            pieces.clear()

    def close_open(self) -> None:
        """A run cut short: text parts still streaming are kept as they are, marked done."""
        for index in list(self._open.values()):
            self._flush(index)
            self._parts[index]["state"] = "done"
        self._open.clear()

    @property
    def parts(self) -> list[dict[str, Any]]:
        for index in self._open.values():
            self._flush(index)
        return self._parts

    @property
    def text(self) -> str:
        """The assistant's words: every text part, in order, separated by blank lines."""
        texts = [p["text"] for p in self.parts if p.get("type") == "text" and p.get("text")]
        return "\n\n".join(texts)

    def mark_approval(self, tool_call_id: str, approved: bool, reason: str | None, by: str | None = None) -> None:
        """``by``: who answered, when it was not the requester (a tool's approver: ``chat.approvals``)."""
        index = self._tools.get(tool_call_id)
        if index is None:
            return
        approval: dict[str, Any] = {"id": tool_call_id, "approved": approved}
        if reason:
            approval["reason"] = reason
        if by:
            approval["decidedBy"] = by
        self._parts[index].update(state="approval-responded", approval=approval)


_HANDLERS: dict[type, Any] = {
    StartStepChunk: PartsCollector._start_step,
    TextStartChunk: PartsCollector._text_start,
    ReasoningStartChunk: PartsCollector._text_start,
    TextEndChunk: PartsCollector._text_end,
    ReasoningEndChunk: PartsCollector._text_end,
    ToolInputStartChunk: PartsCollector._tool_start,
    ToolInputAvailableChunk: PartsCollector._tool_input,
    ToolInputErrorChunk: PartsCollector._tool_input_error,
    ToolApprovalRequestChunk: PartsCollector._approval,
    ToolOutputAvailableChunk: PartsCollector._output,
    ToolOutputErrorChunk: PartsCollector._output_error,
    ToolOutputDeniedChunk: PartsCollector._denied,
    ErrorChunk: PartsCollector._error,
}
