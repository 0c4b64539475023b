"""The config and input of the ``mcp`` tool type (apart, so the service can build rows without the type)."""

from __future__ import annotations

from typing import Any

from pydantic import Field, RootModel

from agentloft.core.schemas import ApiModel

EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


class Config(ApiModel):
    server_id: str = Field(min_length=1, max_length=40, description="The MCP server (mcp_servers.id).")
    tool_name: str = Field(min_length=1, max_length=500, description="The tool's name on that server.")
    title: str = Field(default="", max_length=500)
    description: str = Field(default="", max_length=20_000, description="The server's description of the tool.")
    input_schema: dict[str, Any] = Field(default_factory=lambda: dict(EMPTY_SCHEMA))
    annotations: dict[str, Any] = Field(
        default_factory=dict,
        description="The server's hints about the tool (title, readOnlyHint, destructiveHint, idempotentHint, "
                    "openWorldHint), reviewed like its description.",
    )
    missing: bool = Field(default=False, description="The server no longer lists the tool.")
    changed: bool = Field(
        default=False, description="Its title, description, input schema or hints changed while it was enabled."
    )
    timeout_seconds: float = Field(default=60, gt=0, le=3600, description="Time limit for one call.")
    max_output_chars: int = Field(
        default=100_000, ge=1_000, le=10_000_000,
        description="Longest text (or serialised structured result) of one call that reaches the model; "
                    "what is longer is cut, with a note saying how much was left out. The call's audio clips "
                    "and binary resources (base64) share the same limit; those past it are left out and "
                    "named with their size.",
    )


class Input(RootModel[dict[str, Any]]):
    """The arguments, as the server's schema wants them."""
