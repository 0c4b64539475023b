"""The MCP server's start-up and shutdown: its session manager runs from one to the other
(``mcp_server.server.McpServer``)."""

from __future__ import annotations

from agentloft.core.runtime import Runtime
from agentloft.mcp_server.server import McpServer


async def startup(rt: Runtime) -> None:
    rt.mcp_server = McpServer(rt)
    await rt.mcp_server.start()


async def shutdown(rt: Runtime) -> None:
    await rt.mcp_server.stop()
