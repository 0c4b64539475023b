"""My usage: the signed-in user's own tokens and cost per day as charts, and by day, agent or model as a
table (``/api/usage``, the same page script as Admin → Usage)."""

from __future__ import annotations

from fastapi import Request, Response

from agentloft.web.deps import PageUser, page_router
from agentloft.web.templating import render_page

router = page_router()


@router.get("/usage")
async def usage_page(request: Request, _: PageUser) -> Response:
    return render_page(request, "usage.html")
