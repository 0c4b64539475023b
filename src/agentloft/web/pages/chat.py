"""The chat page. (Replaced by the full chat client once the chat API exists.)"""

from __future__ import annotations

from fastapi import Request, Response

from agentloft.web.deps import PageUser, page_router
from agentloft.web.templating import render_page

router = page_router()


@router.get("/chat")
async def chat_page(request: Request, _: PageUser) -> Response:
    return render_page(request, "chat/chat.html", session_id=None)
