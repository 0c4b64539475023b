"""``/``: the chat for someone signed in, the sign-in page for anyone else; ``/favicon.ico``."""

from __future__ import annotations

from fastapi.responses import RedirectResponse

from agentloft.auth.dependencies import OptionalUser
from agentloft.web.deps import page_router
from agentloft.web.templating import static_url

router = page_router()


@router.get("/favicon.ico")
async def favicon() -> RedirectResponse:
    """For clients that ask the conventional address instead of reading the page's icon link."""
    return RedirectResponse(static_url("favicon.svg"), status_code=301)


@router.get("/")
async def home(user: OptionalUser) -> RedirectResponse:
    return RedirectResponse("/chat" if user else "/login", status_code=303)
