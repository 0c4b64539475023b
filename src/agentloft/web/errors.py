"""Unknown addresses: a person who mistypes a page's address gets the HTML 404 page in their language;
programs keep the JSON error shape on every address that is theirs (the API, the A2A endpoints, the
OpenAPI document and its viewer, static files), and anywhere else when they do not ask for HTML."""

from __future__ import annotations

from fastapi import FastAPI, Request, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentloft.auth.dependencies import request_user
from agentloft.core.errors import NotFound, http_error_response
from agentloft.web.deps import error_page

# Paths whose unknown addresses answer JSON, as they always did.
MACHINE_PREFIXES = ("/api/", "/a2a/", "/docs", "/redoc", "/openapi.json", "/static/", "/.well-known/")


def wants_page(request: Request) -> bool:
    """A browser's GET for something that is not an API, A2A, documentation or static address. A browser
    names text/html in ``Accept`` when it loads a page; a program sends ``application/json`` or ``*/*`` (or
    nothing) and reads the JSON error it would get on any other address."""
    path = request.url.path
    if request.method not in ("GET", "HEAD") or path.startswith(MACHINE_PREFIXES) or path == "/api":
        return False
    return "text/html" in request.headers.get("accept", "").lower()


async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
    if exc.status_code == 404 and wants_page(request):
        await request_user(request)  # so the page's top bar knows who is signed in
        return error_page(request, NotFound("There is no page at this address.", code="page_not_found"))
    return http_error_response(exc)


def install_page_errors(app: FastAPI) -> None:
    """Replace the JSON-only handler for routing errors with one that answers pages with a page."""
    app.exception_handler(StarletteHTTPException)(http_error)
