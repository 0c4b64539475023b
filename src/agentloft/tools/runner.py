"""The one wrapper every tool call passes through, whoever calls it (chat engine, A2A, admin debug).

It owns the rules shared by all tools, so no tool type repeats them:
- input from the model is validated against the type's ``Input``; a mismatch is a failed result that
  carries the validation message (the run goes on and the model can correct itself);
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


def needs_approval(tool: RunTool, raw_args: dict[str, Any], ctx: ToolContext) -> bool:
    """Whether this call must wait for the user: the tool (or agent override) says so, or the type asks
    for this particular input (e.g. the document tool's ``approvalRequiredActions``)."""
    if tool.needs_approval:
        return True
    try:
        parsed = parse_input(tool, raw_args)
    except (ValidationError, InvalidInput):
        return False  # invalid input never executes; it fails in run_tool with the message
    return _asks_approval(tool, parsed, ctx)


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


async def run_tool(tool: RunTool, raw_args: dict[str, Any], ctx: ToolContext) -> ToolResult:
    """Validate, refuse a call that needs approval without it, execute with a time limit, time it, and
    never raise."""
    started = time.perf_counter()

    def done(result: ToolResult) -> ToolResult:
        result.metadata.setdefault("durationMs", int((time.perf_counter() - started) * 1000))
        return result

    try:
        parsed = parse_input(tool, raw_args)
    except ValidationError as exc:
        return done(ToolResult.fail(_validation_message(exc), code="invalid_input"))
    except InvalidInput as exc:
        return done(ToolResult.fail(f"invalid input: {exc}", code="invalid_input"))
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
