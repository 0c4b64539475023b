"""The ``mcp`` tool type: one tool of an MCP server, as an ``agent_tools`` row.

Its config names the server (``serverId``) and the tool's own name (``toolName``, what goes on the
wire), and keeps what the server said about the tool (``title``, ``description``, ``inputSchema``,
``annotations``) as of the last refresh. The schema is data, not a Pydantic model, so the type checks the
model's arguments against it with ``jsonschema`` (the wrapper turns a mismatch into a failed result, as
for every type).
Rows are made by a server's refresh, never by hand. While the server is disabled its tools are
unavailable: no model gets them (``unavailable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
from jsonschema.validators import validator_for
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.tools.base import InvalidInput, ToolContext, ToolResult, ToolType
from agentloft.tools.mcp import service
from agentloft.tools.mcp.config import EMPTY_SCHEMA, Config, Input

MAX_ERRORS = 5


def _message(error: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in error.absolute_path) or "input"
    return f"{where}: {error.message}"


class McpToolType(ToolType[Config, Input]):
    slug = "mcp"
    name = "MCP tool"
    description = "A tool of an MCP server; its tools appear here when the server is refreshed."
    Config = Config
    Input = Input
    made_by_hand = False  # rows come from a server's refresh

    def input_schema(self, config: Config) -> dict[str, Any]:
        return config.input_schema or dict(EMPTY_SCHEMA)

    def parse_input(self, raw: dict[str, Any], config: Config) -> Input:
        schema = self.input_schema(config)
        try:
            validator_class = validator_for(schema)
            errors = sorted(validator_class(schema).iter_errors(raw), key=lambda e: list(e.absolute_path))
        except jsonschema.SchemaError as exc:
            raise InvalidInput(f"the server's input schema is not valid: {exc.message}") from exc
        if errors:
            raise InvalidInput("; ".join(_message(e) for e in errors[:MAX_ERRORS]))
        return Input(raw)

    def describe(self, config: Config) -> str:
        return config.description.strip() or config.title or f"The '{config.tool_name}' tool of an MCP server."

    async def unavailable(
        self, *, db: AsyncSession, configs: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, str]:
        """A disabled server's tools reach no model, whatever their own switch says."""
        return await service.unavailable_tools(db=db, configs=configs)

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        return await service.call_tool(rt=ctx.runtime, config=config, arguments=input.root)


TOOL_TYPE = McpToolType()
