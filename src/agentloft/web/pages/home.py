"""``/``: the chat for someone signed in, the sign-in page for anyone else."""

from __future__ import annotations

from fastapi.responses import RedirectResponse

from agentloft.auth.dependencies import OptionalUser
from agentloft.web.deps import page_router

router = page_router()


@router.get("/")
async def home(user: OptionalUser) -> RedirectResponse:
    return RedirectResponse("/chat" if user else "/login", status_code=303)
