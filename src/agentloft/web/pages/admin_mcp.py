"""``/admin/mcp-servers``: the MCP servers (add, edit, refresh) and each server's tools with the server's
own descriptions, to read before enabling them. Data goes through /api/admin/mcp-servers and, for a tool's
switches, /api/agent-tools."""

from __future__ import annotations

from fastapi import Request, Response

from agentloft.web.deps import AdminPage, page_router
from agentloft.web.templating import render_page

router = page_router()


@router.get("/admin/mcp-servers")
async def mcp_page(request: Request, _: AdminPage) -> Response:
    return render_page(request, "admin/mcp.html", section="mcp")
