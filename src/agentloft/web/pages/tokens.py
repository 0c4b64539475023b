"""The personal API tokens page; the list and the actions go through /api/auth/tokens."""

from __future__ import annotations

from fastapi import Request, Response

from agentloft.web.deps import PageUser, page_router
from agentloft.web.templating import render_page

router = page_router()


@router.get("/tokens")
async def tokens_page(request: Request, _: PageUser) -> Response:
    return render_page(request, "tokens.html")
