"""The agent-invoke tool's work (seed 003, 3.2.4): turn a tool call into an A2A task and its result.

The tool type module (``tools/types/agent_invoke.py``) keeps its Config and Input and delegates
``execute`` here, so the tool layer never learns how tasks are run. Every failure is a failed
``ToolResult``; the caller's run goes on whatever happens to the callee.
"""

from __future__ import annotations

import logging

from agentloft.a2a import service
from agentloft.tools.base import ToolContext, ToolResult
from agentloft.tools.types.agent_invoke import Config

log = logging.getLogger(__name__)


def options_from(config: Config) -> service.InvokeOptions:
    """The tool's Config (``maxRecursionDepth``, ``timeoutMs``, ``maxOutputTokens``, ``allowedAgents``)."""
    return service.InvokeOptions(
        max_recursion_depth=config.max_recursion_depth,
        timeout_s=config.timeout_ms / 1000.0,
        max_output_tokens=config.max_output_tokens,
        allowed_agents=list(config.allowed_agents),
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


async def execute(agent_slug: str, input_text: str, config: Config, ctx: ToolContext) -> ToolResult:
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
