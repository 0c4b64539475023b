"""The one wrapper every tool call passes through, whoever calls it (chat engine, A2A, admin debug).

It owns the rules shared by all tools, so no tool type repeats them:
- input from the model is validated against the type's ``Input``; a mismatch is a failed result that
  carries the validation message (the run goes on and the model can correct itself). It is validated once
  per call (``parse_call``): the approval check and the run read the same ``ParsedCall`` (an MCP tool's
  input is checked against the server's JSON Schema, not cheap to do twice);
- an exception inside a tool becomes a failed result and a log line; a tool that overruns its time
  limit is a failed result;
- ``metadata.durationMs`` is always set; failures of its own carry ``metadata.code`` (``invalid_input``,
  ``tool_timeout``, ``tool_crashed``) so pages can word them in the reader's language.
Visibility (admin-only, disabled) is decided when the run's tools are loaded (``tools.loading``): a tool
that is not in a run's list cannot be called in that run at all. Approval is decided by
``needs_approval`` below; the chat engine pauses on it and resumes with ``ctx.approved`` set, and
``run_tool`` itself refuses a call that needs approval without it (seed 000: ``approved`` is true only
for a call that was approved), so no caller — the admin's debug runner included — can skip it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from pydantic import BaseModel, ValidationError

from agentloft.tools.base import InvalidInput, ToolContext, ToolResult, ToolType

log = logging.getLogger(__name__)

DEFAULT_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class RunTool:
    """A tool as one run sees it: the row's identity, its parsed config and its effective approval rule.

    ``name`` is the function name the model sees (the tool's slug). ``tools.loading`` keeps one per
    version of a tool row and hands the same object to every turn, so what is derived from it here is
    derived once per edit of the row, not once per turn."""

    id: str
    name: str
    title: str
    description: str
    type: ToolType[Any, Any]
    config: BaseModel
    needs_approval: bool
    timeout_s: float = DEFAULT_TIMEOUT_S
    audit_arguments: bool = False  # the audit trail keeps this tool's call arguments (``tool.call``)

    @cached_property
    def input_schema(self) -> dict[str, Any]:
        """The JSON Schema the model fills (the type's, for this config). Built on first use and kept:
        building it walks the whole ``Input`` model (0.5-6 ms per tool on this machine), and a run asks
        for it at every step. Callers treat it as read-only."""
        return self.type.input_schema(self.config)


def _validation_message(exc: ValidationError) -> str:
    parts = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err.get("loc", ())) or "input"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "invalid input: " + "; ".join(parts)


def parse_input(tool: RunTool, raw_args: dict[str, Any] | BaseModel) -> BaseModel:
    if isinstance(raw_args, BaseModel):
        return raw_args
    return tool.type.parse_input(raw_args, tool.config)


@dataclass(frozen=True)
class ParsedCall:
    """One call's input, validated once: its parsed ``input``, or the ``error`` message invalid input
    gets. ``started`` is when the call reached the wrapper, so ``durationMs`` counts the validation too."""

    input: BaseModel | None
    error: str | None
    started: float


def parse_call(tool: RunTool, raw_args: dict[str, Any] | BaseModel) -> ParsedCall:
    """Validate the model's arguments against the tool's input, once for the whole call."""
    started = time.perf_counter()
    try:
        return ParsedCall(input=parse_input(tool, raw_args), error=None, started=started)
    except ValidationError as exc:
        return ParsedCall(input=None, error=_validation_message(exc), started=started)
    except InvalidInput as exc:
        return ParsedCall(input=None, error=f"invalid input: {exc}", started=started)


def _parsed(tool: RunTool, call: dict[str, Any] | ParsedCall) -> ParsedCall:
    return call if isinstance(call, ParsedCall) else parse_call(tool, call)


def needs_approval(tool: RunTool, call: dict[str, Any] | ParsedCall, ctx: ToolContext) -> bool:
    """Whether this call must wait for the user: the tool (or agent override) says so, or the type asks
    for this particular input (e.g. the document tool's ``approvalRequiredActions``). Pass the
    ``ParsedCall`` that ``run_tool`` gets next, so the input is validated once."""
    if tool.needs_approval:
        return True
    parsed = _parsed(tool, call)
    # invalid input never executes; it fails in run_tool with the message
    return parsed.input is not None and _asks_approval(tool, parsed.input, ctx)


def _asks_approval(tool: RunTool, parsed: BaseModel, ctx: ToolContext) -> bool:
    return tool.needs_approval or bool(tool.type.needs_approval(parsed, tool.config, ctx))


def approval_needed(tool: RunTool) -> ToolResult:
    """The answer to a call that needs approval and was not approved: nothing ran (seed 000's shape,
    ``metadata.needsApproval``)."""
    return ToolResult.fail(
        f"tool '{tool.name}' needs approval for this call: nothing was done; run it again once approved",
        needsApproval=True,
        code="approval_required",
    )


async def run_tool(tool: RunTool, call: dict[str, Any] | ParsedCall, ctx: ToolContext) -> ToolResult:
    """Validate (unless ``call`` is a ``ParsedCall`` already), refuse a call that needs approval without
    it, execute with a time limit, time it, and never raise."""
    checked = _parsed(tool, call)

    def done(result: ToolResult) -> ToolResult:
        result.metadata.setdefault("durationMs", int((time.perf_counter() - checked.started) * 1000))
        return result

    parsed = checked.input
    if parsed is None:
        return done(ToolResult.fail(checked.error or "invalid input", code="invalid_input"))
    if not ctx.approved and _asks_approval(tool, parsed, ctx):
        return done(approval_needed(tool))
    try:
        result = await asyncio.wait_for(tool.type.execute(parsed, tool.config, ctx), timeout=tool.timeout_s)
    except TimeoutError:
        return done(ToolResult.fail(f"tool '{tool.name}' timed out after {tool.timeout_s:g} s", code="tool_timeout"))
    except asyncio.CancelledError:
        raise
    except Exception as exc:
        log.exception("tool %s (%s) failed", tool.name, tool.type.slug)
        return done(ToolResult.fail(f"tool '{tool.name}' failed: {type(exc).__name__}: {exc}", code="tool_crashed"))
    if not isinstance(result, ToolResult):
        return done(ToolResult.fail(f"tool '{tool.name}' returned {type(result).__name__}, not a ToolResult",
                                    code="tool_crashed"))
    return done(result)
