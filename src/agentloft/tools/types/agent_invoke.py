"""Agent invoke: hand a sub-task to another agent over A2A (seed 003).

This module registers the type with its schemas; the A2A domain supplies the execution (``a2a.invoke``),
imported only when a call runs, so loading the tool types never pulls in a2a and the engine.
"""

from __future__ import annotations

from pydantic import Field

from agentloft.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType


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
    input: str = Field(min_length=1, description="The task or question for that agent, with all context it needs.")


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

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        # Imported when called, not at module load: a2a imports the engine, which loads tool types.
        from agentloft.a2a import invoke

        return await invoke.execute(input.agent_slug, input.input, config, ctx)


TOOL_TYPE = AgentInvokeTool()
