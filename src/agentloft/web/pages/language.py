"""``GET /lang/{code}``: remember the chosen language in a cookie and go back to the page."""

from __future__ import annotations

from fastapi.responses import RedirectResponse

from agentloft.core.errors import NotFound
from agentloft.web import i18n
from agentloft.web.deps import page_router, safe_next

router = page_router()


@router.get("/lang/{code}")
async def switch_language(code: str, next: str | None = None) -> RedirectResponse:
    if code not in i18n.LANGUAGES:
        raise NotFound(f"unknown language '{code}'", code="language_not_found")
    response = RedirectResponse(safe_next(next), status_code=303)
    response.set_cookie(i18n.LANG_COOKIE, code, max_age=365 * 86400, samesite="lax", path="/")
    return response
