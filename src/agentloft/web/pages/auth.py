"""Sign-in and sign-up pages. The forms post JSON to /api/auth/*; these routes only render."""

from __future__ import annotations

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from agentloft.auth import service as auth_service
from agentloft.auth.dependencies import OptionalUser
from agentloft.core.dependencies import DbSession, Rt
from agentloft.system import service as system_service
from agentloft.web.deps import page_router, safe_next
from agentloft.web.templating import render_page

router = page_router()


@router.get("/login")
async def login_page(
    request: Request, user: OptionalUser, rt: Rt, db: DbSession, next: str | None = None
) -> Response:
    """``signup_open``: "No account? Create one" is offered only where it leads somewhere; behind it
    a closed instance has nothing but "sign-up is closed"."""
    target = safe_next(next)
    if user is not None:
        return RedirectResponse(target, status_code=303)
    no_accounts = await auth_service.count_users(db=db) == 0
    instance = await system_service.get_settings(db=db, settings=rt.settings)
    return render_page(request, "auth/login.html", next=target, no_accounts=no_accounts,
                       signup_open=not no_accounts and instance.signup_open)


@router.get("/signup")
async def signup_page(request: Request, user: OptionalUser, rt: Rt, db: DbSession) -> Response:
    if user is not None:
        return RedirectResponse("/", status_code=303)
    first = await auth_service.count_users(db=db) == 0
    instance = await system_service.get_settings(db=db, settings=rt.settings)
    return render_page(
        request, "auth/signup.html", first_account=first, signup_open=first or instance.signup_open
    )
