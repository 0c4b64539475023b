"""Who may see a page, and how a page says no.

API dependencies answer JSON errors; pages must instead redirect a stranger to /login and show an HTML
error page (same code and message as the API would give). ``PageRoute`` does that translation for
every page router, so a page function only declares ``PageUser`` or ``AdminPage`` and never checks.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import RedirectResponse
from fastapi.routing import APIRoute

from agentloft.auth.dependencies import OptionalUser
from agentloft.auth.models import User
from agentloft.chat import approvals
from agentloft.core.errors import AppError, Forbidden, invalid_request
from agentloft.core.requests import current_request_id
from agentloft.groups import access
from agentloft.web.templating import render_page


class SignInRequired(Exception):
    """Raised by ``PageUser`` when nobody is signed in; becomes a redirect to /login."""


def safe_next(target: str | None, default: str = "/") -> str:
    """Only same-site paths are followed after sign-in (no ``//evil`` or absolute URLs).

    Control characters are refused too: browsers drop tabs and newlines from a URL before reading it,
    so ``/<tab>/evil.example`` would send the sign-in page's script to ``//evil.example``.
    """
    if not target or any(ord(c) < 0x20 or ord(c) == 0x7F for c in target):
        return default
    if not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target


def error_page(request: Request, err: AppError) -> Response:
    return render_page(
        request, "error.html", status=err.status, status_code=err.status, code=err.code, message=err.message,
        request_id=current_request_id(),
    )


class PageRoute(APIRoute):
    """Turns page-level refusals into a redirect or an error page instead of JSON, and answers HEAD like
    GET (the server sends no body): uptime checks and link checkers ask with HEAD."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        if self.methods is not None and "GET" in self.methods:
            self.methods.add("HEAD")

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def page_handler(request: Request) -> Response:
            try:
                return await handler(request)
            except SignInRequired:
                target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
                return RedirectResponse(f"/login?next={quote(target, safe='')}", status_code=303)
            except AppError as err:
                return error_page(request, err)
            except RequestValidationError as exc:  # a page address with a bad query, e.g. ?page=-1
                return error_page(request, invalid_request(exc))

        return page_handler


async def _page_user(request: Request, user: OptionalUser) -> User:
    if user is None:
        raise SignInRequired()
    request.state.inbox_nav = await _inbox_nav(request, user)
    return user


async def _inbox_nav(request: Request, user: User) -> approvals.InboxNav:
    """The top bar's Approvals entry and its count (``chat.approvals.inbox_nav``), read with the page's
    user so every page shows it without asking for it."""
    database = request.app.state.db
    viewer = await access.viewer_of(database, user_id=user.id, role=user.role)
    async with database.read_session() as db:
        return await approvals.inbox_nav(db=db, user_id=user.id, viewer=viewer)


async def _admin_page(user: Annotated[User, Depends(_page_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("administrators only", code="admin_required")
    return user


PageUser = Annotated[User, Depends(_page_user)]
AdminPage = Annotated[User, Depends(_admin_page)]


def page_router() -> APIRouter:
    """A router for HTML pages: refusals become pages, and pages stay out of the OpenAPI document."""
    return APIRouter(route_class=PageRoute, include_in_schema=False)
