"""Agent invoke: hand a sub-task to another agent over A2A (seed 003, 3.2.4): a tool call becomes an A2A
task, and the callee's reply its result. Every failure is a failed ``ToolResult``; the caller's run goes
on whatever happens to the callee, except a callee that waits for a tool approval: then the call is
deferred (``ToolResult.defer``), the caller's turn pauses, and ``a2a.waiting`` resumes it with the
callee's outcome once the calling user answered in the side panel.

The type lives in the A2A domain and is registered at its start-up (``a2a.lifecycle``) through the
registry's add-on call, so the tool layer never imports a2a: imports run one way, a2a → chat → tools.
"""

from __future__ import annotations

import logging

from pydantic import Field

from agentloft.a2a import service, tasks
from agentloft.chat.schemas import MAX_MESSAGE_CHARS
from agentloft.core.schemas import ApiModel
from agentloft.tools.base import Hidden, ToolContext, ToolResult, ToolType

log = logging.getLogger(__name__)


class Config(ApiModel):
    max_recursion_depth: int = Field(
        default=3, ge=1, le=10, description="How deep agents may call agents (a calls b calls c ...)."
    )
    timeout_ms: int = Field(
        default=120_000, ge=1_000, le=3_600_000, description="Time limit for the called agent, in milliseconds."
    )
    max_output_tokens: int = Field(
        default=2_000, ge=1, le=200_000, description="Largest answer the called agent may give, in tokens."
    )
    allowed_agents: list[str] = Field(
        default_factory=list, description="Slugs of agents that may be called; empty means any A2A-callable agent."
    )


class Input(ApiModel):
    agent_slug: str = Field(min_length=1, max_length=200, description="Slug of the agent to call.")
    input: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS,
                       description="The task or question for that agent, with all context it needs.")


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
        group_ids=ctx.group_ids,
        agent_id=ctx.agent_id,
        session_id=ctx.session_id,
        recursion_depth=ctx.recursion_depth,
        chain=list(chain) if chain else [],
        context={"via": "agent-invoke", "toolId": ctx.tool_id, "toolCallId": ctx.tool_call_id},
    )


async def invoke(agent_slug: str, input_text: str, config: Config, ctx: ToolContext) -> ToolResult:
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
    if outcome.state == tasks.INPUT_REQUIRED:  # the caller's turn waits; ``a2a.waiting`` gives the result
        return ToolResult.defer(outcome.error or "the called agent waits for an approval", **meta)
    if outcome.state != tasks.COMPLETED:
        return ToolResult.fail(outcome.error or f"the called agent's task {outcome.state}", **meta)
    return ToolResult.ok(outcome.text, **meta)


class AgentInvokeTool(ToolType[Config, Input]):
    slug = "agent-invoke"
    name = "Invoke agent"
    description = "Delegates a sub-task to another agent over A2A and returns its answer."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        who = ", ".join(config.allowed_agents) if config.allowed_agents else "any agent that accepts A2A calls"
        return (
            "Ask another agent to handle a sub-task and return its answer. Give it everything it needs in "
            f"`input`, it does not see this conversation. Agents you may call: {who}."
        )

    def for_caller(self, config: Config, hidden: Hidden) -> Config | None:
        """Without the agents the caller may not use; None when it named only such agents (an empty
        list would mean "any agent")."""
        if not hidden.agents.intersection(config.allowed_agents):
            return config
        kept = [slug for slug in config.allowed_agents if slug not in hidden.agents]
        return config.model_copy(update={"allowed_agents": kept}) if kept else None

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        return await invoke(input.agent_slug, input.input, config, ctx)


TOOL_TYPE = AgentInvokeTool()
