"""The agent-invoke tool's work (seed 003, 3.2.4): turn a tool call into an A2A task and its result.

The tool type module (``tools/types/agent_invoke.py``) keeps its Config and Input and delegates
``execute`` here, so the tool layer never learns how tasks are run. Every failure is a failed
``ToolResult``; the caller's run goes on whatever happens to the callee.
"""

from __future__ import annotations

import logging
from typing import Any

from agentloft.a2a import service
from agentloft.tools.base import ToolContext, ToolResult

log = logging.getLogger(__name__)


def _config_value(config: Any, *names: str, default: Any = None) -> Any:
    for name in names:
        value = getattr(config, name, None)
        if value is not None:
            return value
    return default


def options_from(config: Any) -> service.InvokeOptions:
    """Read the tool's Config (``maxRecursionDepth``, ``timeoutMs``, ``maxOutputTokens``,
    ``allowedAgents``) whatever the Python spelling of its fields."""
    timeout_ms = _config_value(config, "timeout_ms", "timeoutMs", default=120_000)
    return service.InvokeOptions(
        max_recursion_depth=int(_config_value(config, "max_recursion_depth", "maxRecursionDepth", default=3)),
        timeout_s=float(timeout_ms) / 1000.0,
        max_output_tokens=_config_value(config, "max_output_tokens", "maxOutputTokens", default=2000),
        allowed_agents=list(_config_value(config, "allowed_agents", "allowedAgents", default=[]) or []),
    )


def caller_from(ctx: ToolContext) -> service.Caller:
    chain = ctx.extra.get(service.CHAIN_KEY)
    return service.Caller(
        user_id=int(ctx.user_id or 0),
        user_role=ctx.user_role or "user",
        agent_id=ctx.agent_id,
        session_id=ctx.session_id,
        recursion_depth=ctx.recursion_depth,
        chain=list(chain) if chain else [],
        context={"via": "agent-invoke", "toolId": ctx.tool_id, "toolCallId": ctx.tool_call_id},
    )


async def execute(agent_slug: str, input_text: str, config: Any, ctx: ToolContext) -> ToolResult:
    """Run the sub-task and return the callee's reply; ``metadata.taskId`` names the task (and panel)."""
    if ctx.user_id is None:
        return ToolResult.fail("agent-invoke needs a signed-in user", agentSlug=agent_slug)
    caller = caller_from(ctx)
    depth = caller.recursion_depth + 1
    try:
        outcome = await service.invoke_agent_via_a2a(
            rt=ctx.runtime, agent_slug=agent_slug, input_text=input_text, caller=caller,
            options=options_from(config), emit=ctx.emit,
        )
    except service.InvocationError as exc:
        return ToolResult.fail(str(exc), agentSlug=agent_slug, recursionDepth=depth)
    meta = {"agentSlug": agent_slug, "recursionDepth": depth, "taskId": outcome.task_id,
            "state": outcome.state, "inputTokens": outcome.input_tokens, "outputTokens": outcome.output_tokens}
    if outcome.state != "completed":
        return ToolResult.fail(outcome.error or f"the called agent's task {outcome.state}", **meta)
    return ToolResult.ok(outcome.text, **meta)
