"""A small add-on tool type used by the tool-system tests: it has a secret, a bounded number and an
input, and echoes what reached ``execute`` so a test can see the decrypted config and the context.

It is registered into a running app the way an add-on registers: ``registry.register(TOOL_TYPE)``.
"""

from __future__ import annotations

from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

# Slugs of the tools whose ``execute`` ran, in order: the live server runs in the test process, so a
# test can tell "refused" from "ran and failed".
CALLS: list[str] = []


class Config(ApiModel):
    endpoint: str = Field(default="https://example.org/api", description="Where the add-on would call.")
    api_key: str = Field(default="", description="Secret; stored encrypted.")
    timeout_ms: int = Field(default=1000, ge=1, le=60_000, description="Per-call time limit.")


class Input(ApiModel):
    text: str = Field(min_length=1, description="Text to echo.")


class EchoTool(ToolType[Config, Input]):
    slug = "test-echo"
    name = "Test echo"
    description = "Echoes its input with what it knows of its config and caller (tests only)."
    Config = Config
    Input = Input
    secret_fields = ("api_key",)

    def describe(self, config: Config) -> str:
        return f"Echo text back (endpoint {config.endpoint})."

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        CALLS.append(ctx.tool_slug)
        return ToolResult.ok(
            {
                "text": input.text,
                "apiKey": config.api_key,
                "userId": ctx.user_id,
                "userRole": ctx.user_role,
                "approved": ctx.approved,
                "toolSlug": ctx.tool_slug,
            }
        )


TOOL_TYPE = EchoTool()
