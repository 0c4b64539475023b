"""MCP start-up and shutdown: the ``mcp`` tool type registered (through the add-on call, like every
type), this process's connection manager built; its connections (and stdio processes) closed, then what
its launcher holds (the networked servers' namespace and proxy)."""

from __future__ import annotations

import logging

from agentloft.core import netguard
from agentloft.core.runtime import Runtime
from agentloft.system import service as system_service
from agentloft.tools.mcp import service, tool
from agentloft.tools.mcp.connections import McpConnections
from agentloft.tools.mcp.launch import launcher_for

log = logging.getLogger(__name__)


async def startup(rt: Runtime) -> None:
    rt.registry.register(tool.TOOL_TYPE)

    async def allow_list() -> netguard.AllowList:
        return await system_service.internal_allow_list(rt=rt)

    async def tools_changed(server_id: str) -> None:
        await service.refresh_server(rt=rt, server_id=server_id)

    rt.mcp = McpConnections(idle_s=rt.settings.mcp_idle_seconds, launcher=launcher_for(rt.settings, allow_list),
                            allow_list=allow_list, on_tools_changed=tools_changed,
                            max_message_bytes=rt.settings.mcp_max_message_bytes,
                            max_tools=rt.settings.mcp_max_tools)


async def shutdown(rt: Runtime) -> None:
    await rt.mcp.aclose()
    await rt.mcp.launcher.aclose()  # the networked servers' namespace and proxy, once their processes ended
