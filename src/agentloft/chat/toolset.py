"""The pydantic-ai toolset a run uses, built from the ``RunTool`` list the tools core hands out.

Only what is in that list exists for the model. Every call goes through ``tools.runner.run_tool`` (input
validation, time limit, exceptions turned into failed results), so the toolset's own argument validator
accepts any object. A call that needs approval raises ``ApprovalRequired`` unless pydantic-ai says this
call was approved on resume; the run then ends with ``DeferredToolRequests`` and the engine pauses. A
tool whose result comes later (``ToolResult.defer``) raises ``CallDeferred`` the same way: the engine
pauses and resumes once ``RunRegistry.resolve_deferred`` has the result.

A result's ``files`` (an MCP tool's images) go to the model as pydantic-ai file parts after the result
(``model_return``), not as base64 text inside it: a model API that takes files in tool results gets them
there, and for one that takes text only (OpenAI's chat completions) pydantic-ai sends them in a user
message right after the tool results, framed as that tool call's result. The stream's tool output is
then ``[result, file...]``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic_ai import CustomEvent, RunContext
from pydantic_ai.exceptions import ApprovalRequired, CallDeferred, ToolFailed
from pydantic_ai.messages import BinaryContent
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from agentloft.audit.chain import Actor, Entry
from agentloft.audit.redact import redact
from agentloft.core.runtime import Runtime
from agentloft.core.tracing import tool_outcome, traced_tool
from agentloft.tools.base import MAX_FILE_BYTES, ToolContext, ToolFile, ToolResult
from agentloft.tools.runner import RunTool, needs_approval, parse_call, run_tool

# Arguments reach ``run_tool`` as a dict; each tool validates them against its own ``Input`` model.
_ANY_ARGS = SchemaValidator(core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema()))


def _file_part(file: ToolFile) -> BinaryContent | str:
    """A tool's file as the model gets it, or a note saying why it was left out."""
    try:
        raw = base64.b64decode(file.data, validate=True)
    except (binascii.Error, ValueError):
        return f"A {file.media_type} file was left out: its data is not valid base64."
    if len(raw) > MAX_FILE_BYTES:
        return f"A {file.media_type} file of {len(raw):,} bytes was left out: larger than {MAX_FILE_BYTES:,} bytes."
    return BinaryContent.narrow_type(BinaryContent(data=raw, media_type=file.media_type))


def model_return(result: ToolResult) -> Any:
    """What the model gets for a successful call: the result as JSON, then its files as file parts."""
    body = result.model_dump(mode="json", exclude={"files"})
    if not result.files:
        return body
    return [body, *(_file_part(f) for f in result.files)]


@dataclass(kw_only=True)
class DataEvent(CustomEvent, _register=False):
    """A ``data-<name>`` chunk a tool sends into its caller's stream (``ToolContext.emit``)."""

    data: Any = None

    def to_payload(self) -> Any:
        return self.data


@dataclass
class RunScope:
    """Who runs the tools and where; copied into every ``ToolContext``."""

    runtime: Runtime
    user_id: int | None
    user_role: str | None
    session_id: str | None
    agent_id: int | None
    recursion_depth: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    group_ids: frozenset[int] = frozenset()  # the user's (``groups.access``)
    # the run's ``tool.call`` events, written with the turn's other writes when it is saved (``engine._save``)
    audit: list[Entry] = field(default_factory=list)


class RunToolset(AbstractToolset[Any]):
    """Exposes the run's tools to pydantic-ai and routes calls through the shared wrapper."""

    def __init__(self, tools: list[RunTool], scope: RunScope) -> None:
        self._tools = {t.name: t for t in tools}
        self._scope = scope
        self._listed: dict[str, ToolsetTool[Any]] | None = None  # built at the run's first step

    @property
    def id(self) -> str | None:
        return "agentloft-tools"

    def _definition(self, tool: RunTool) -> ToolDefinition:
        return ToolDefinition(
            name=tool.name,
            description=tool.description,
            parameters_json_schema=tool.input_schema,
            strict=False,  # local OpenAI-compatible servers often refuse strict schemas
        )

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        """The run's tools; pydantic-ai asks at every step, the list is the same for the whole run."""
        if self._listed is None:
            self._listed = {
                name: ToolsetTool(toolset=self, tool_def=self._definition(tool), max_retries=2,
                                  args_validator=_ANY_ARGS)
                for name, tool in self._tools.items()
            }
        return dict(self._listed)

    def _context(self, tool: RunTool, ctx: RunContext[Any]) -> ToolContext:
        scope = self._scope
        return ToolContext(
            runtime=scope.runtime,
            tool_id=tool.id,
            tool_slug=tool.name,
            user_id=scope.user_id,
            user_role=scope.user_role,
            group_ids=scope.group_ids,
            session_id=scope.session_id,
            agent_id=scope.agent_id,
            recursion_depth=scope.recursion_depth,
            approved=ctx.tool_call_approved,
            tool_call_id=ctx.tool_call_id,
            emit=_emitter(ctx),
            extra=dict(scope.extra),
        )

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        """Run the call (``_call``); with traces on inside its ``execute_tool <name>`` span
        (``core.tracing.traced_tool``), which the A2A and MCP requests it makes continue."""
        tracing = self._scope.runtime.tracing
        if not tracing.enabled:
            return await self._call(name, tool_args, ctx)
        with traced_tool(tracing, name=name, call_id=ctx.tool_call_id, tool_type=self._tools[name].type.slug,
                         arguments=tool_args, passing=_CONTROL_FLOW):
            return await self._call(name, tool_args, ctx)

    async def _call(self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any]) -> Any:
        run_tool_ = self._tools[name]
        tctx = self._context(run_tool_, ctx)
        rt = self._scope.runtime
        parsed = parse_call(run_tool_, tool_args)  # once: the approval check and the run read it
        if not ctx.tool_call_approved and needs_approval(run_tool_, parsed, tctx):
            if rt.tracing.enabled:
                tool_outcome(rt.tracing, "approval_required")
            raise ApprovalRequired()
        result = await run_tool(run_tool_, parsed, tctx)
        if result.deferred:  # the run ends with this call in ``DeferredToolRequests.calls``; no result yet
            if rt.tracing.enabled:
                tool_outcome(rt.tracing, "deferred")
            raise CallDeferred(metadata={k: v for k, v in result.metadata.items() if k != "deferred"})
        if rt.tracing.enabled:
            tool_outcome(rt.tracing, None, success=result.success, code=result.metadata.get("code"),
                         result=lambda: result.model_dump(mode="json", exclude={"files"}))
        self._scope.audit.append(tool_call_entry(run_tool_, tool_args, result, tctx))
        rt.metrics.tool_call(run_tool_.type.slug, result.success, result.metadata.get("code"))
        if not result.success:
            # The model sees the failure as such, and the stream carries ``tool-output-error``. A failure
            # with a code also sends ``data-tool-error`` first, so the page can word it for the reader.
            code = result.metadata.get("code")
            if isinstance(code, str) and ctx.tool_call_id:
                await _emitter(ctx)("tool-error", {"toolCallId": ctx.tool_call_id, "code": code})
            raise ToolFailed(result.error or f"tool '{name}' failed")
        return model_return(result)


# What ``_call`` raises on purpose: a pause, or a failed result the model is told of (the span's outcome
# says which); anything else is a crash.
_CONTROL_FLOW: tuple[type[BaseException], ...] = (ApprovalRequired, CallDeferred, ToolFailed)


def tool_call_entry(tool: RunTool, args: dict[str, Any], result: ToolResult, ctx: ToolContext) -> Entry:
    """A call as the audit trail keeps it (``tool.call``): which tool, for whom, in which agent and session,
    how it ended and how long it took; its arguments only when the tool is marked to keep them
    (``auditArguments``), else only their names."""
    detail: dict[str, Any] = {
        "tool": tool.name, "toolId": tool.id, "toolCallId": ctx.tool_call_id, "agentId": ctx.agent_id,
        "sessionId": ctx.session_id, "outcome": "success" if result.success else "failed",
        "code": result.metadata.get("code"), "durationMs": result.metadata.get("durationMs"),
    }
    if tool.audit_arguments:
        detail["arguments"] = redact(args)
    else:
        detail["argumentNames"] = sorted(str(k) for k in args)
    return Entry(type="tool.call", actor=Actor(id=ctx.user_id), target=f"tool:{tool.name}", detail=detail)


def _emitter(ctx: RunContext[Any]) -> Callable[[str, dict[str, Any]], Awaitable[None]]:
    async def emit(name: str, data: dict[str, Any]) -> None:
        await ctx.emit(DataEvent(name=name, data=data))

    return emit
