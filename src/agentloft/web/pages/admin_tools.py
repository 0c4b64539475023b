"""``/admin/agent-tools``: the tool table (seed 001's permission column), the create/edit dialog with a
config form generated from the type's JSON Schema, and the debug panel. Data goes through /api/agent-tools."""

from __future__ import annotations

from fastapi import Request, Response

from agentloft.web.deps import AdminPage, page_router
from agentloft.web.templating import render_page

router = page_router()


@router.get("/admin/agent-tools")
async def tools_page(request: Request, _: AdminPage) -> Response:
    return render_page(request, "admin/tools.html", section="tools")
