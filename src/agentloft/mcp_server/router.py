"""``/mcp``: the HTTP edge of the MCP server (streamable HTTP; ``POST`` carries every message and its
answer, ``GET`` is refused with ``405`` once its token is checked: a stateless server has no stream of its
own to offer, see ``mcp_server.server``).

A route of the app's own router rather than a mounted sub-app, so every middleware of the app wraps it as
it wraps ``/v1``: the request id (``X-Request-ID``, and ``requestId`` in our errors), the body size limit,
the security headers, metrics and traces. The endpoint is a plain ASGI app, because the SDK's transport
writes its own responses (SSE streams, its JSON-RPC errors).

Authenticated by a personal API token only, resolved as ``/v1`` resolves it
(``auth.dependencies.api_token_user``), before the SDK reads anything: a missing or unknown token is our
``401`` (``{"error": {"code", "message", "requestId"}}``, ``WWW-Authenticate: Bearer``), not a JSON-RPC
error, so that a host knows to ask its user for a token. The token's user and the address chat links
start with go to the SDK's handlers in the ASGI scope (``server.CALLER``).
"""

from __future__ import annotations

import contextvars

from fastapi import APIRouter
from starlette.requests import Request
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from agentloft.auth.dependencies import api_token_user
from agentloft.core.errors import AppError, error_response
from agentloft.core.public_url import public_base_url
from agentloft.core.runtime import Runtime
from agentloft.mcp_server.server import CALLER, CONTEXT
from agentloft.mcp_server.service import Caller

PATH = "/mcp"


def _no_server_stream() -> AppError:
    return AppError("This MCP server is stateless and sends nothing outside the answer to a request: POST your "
                    "messages", code="method_not_allowed", status=405, headers={"Allow": "POST"})


class McpEndpoint:
    """The ASGI app behind ``/mcp``: the caller resolved, then the SDK's session manager."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = ROUTE  # FastAPI names only its own routes: the log line, metrics and span need it
        request = Request(scope, receive)
        rt: Runtime = request.app.state.runtime
        try:
            user = await api_token_user(request)
        except AppError as exc:
            await error_response(exc)(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD"):
            await error_response(_no_server_stream())(scope, receive, send)
            return
        scope[CALLER] = Caller(user=user, base_url=public_base_url(request, rt.settings))
        scope[CONTEXT] = contextvars.copy_context()  # the request's id and trace, for the turn it starts
        await rt.mcp_server.manager.handle_request(scope, receive, send)


ROUTE = Route(PATH, McpEndpoint(), methods=["GET", "POST", "DELETE"], include_in_schema=False)
router = APIRouter(tags=["mcp"])
router.routes.append(ROUTE)
