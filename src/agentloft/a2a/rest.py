"""The A2A HTTP+JSON (REST) binding, served next to JSON-RPC and listed in every agent card.

``/a2a/{slug}/rest/message:send``, ``…/message:stream``, ``…/tasks/{id}``, ``…/tasks/{id}:cancel``,
``…/tasks/{id}:subscribe``, ``…/tasks`` and the rest of the binding, for every enabled, A2A-callable local
agent, with the same personal-token sign-in and the same request handler (tasks, owners, the running
task registry) as the JSON-RPC side.

a2a-sdk's ``create_rest_routes`` gives the binding's route table; it ends with a catch-all
``Mount('/{tenant}')`` that would swallow any later route of two or more segments if mounted on the app.
So the table is never mounted: the one FastAPI route of ``a2a.router`` hands the path below ``rest/`` to
:func:`dispatch`, which matches it against the table (less the tenant mount: no tenants here) and calls the
SDK's endpoint with that request.

Also here: the JSON-RPC side's content-type rule. A JSON-RPC request whose ``Content-Type`` is not JSON
answers ``ContentTypeNotSupportedError`` (-32005, the JSON-RPC face of the REST binding's 415), as the A2A
conformance kit expects; a JSON body that does not parse still answers -32700 from the SDK.

The REST binding's JSON answers say ``application/json``, as the specification asks, not the SDK's
``application/a2a+json``; requests of either type are taken.

Both bindings read the body through ``a2a.limits`` first, which refuses what is too large for the SDK to
parse in good time; these are the two error shapes such a refusal is answered in.
"""

from __future__ import annotations

from a2a.server.jsonrpc_models import JSONRPCError
from a2a.server.request_handlers import RequestHandler
from a2a.server.request_handlers.response_helpers import build_error_response
from a2a.server.routes import ServerCallContextBuilder, create_rest_routes
from a2a.types import ContentTypeNotSupportedError
from a2a.utils.constants import A2A_JSON_MEDIA_TYPE
from a2a.utils.error_handlers import build_rest_error_payload
from a2a.utils.errors import A2AError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match, Route

from agentloft.a2a.limits import CheckedRequest
from agentloft.core.errors import AppError, NotFound

REST_PATH = "rest"
JSON_TYPES = ("application/json", "application/a2a+json")


def _routes(handler: RequestHandler, builder: ServerCallContextBuilder) -> list[Route]:
    """The binding's routes, without the catch-all tenant mount."""
    return [r for r in create_rest_routes(handler, context_builder=builder) if isinstance(r, Route)]


async def dispatch(request: CheckedRequest, path: str, handler: RequestHandler, builder: ServerCallContextBuilder
                   ) -> Response:
    """Answer one REST request whose path below ``/a2a/{slug}/rest`` is ``path``."""
    scope = {**request.scope, "path": "/" + path.lstrip("/"), "root_path": "", "raw_path": b""}
    allowed = False
    for route in _routes(handler, builder):
        match, child = route.matches(scope)
        if match == Match.FULL:
            return _plain_json(await route.endpoint(request.with_scope({**scope, **child})))
        allowed = allowed or match == Match.PARTIAL
    message = f"no A2A REST method at {request.method} /{path}"
    if allowed:
        raise AppError(message, code="method_not_allowed", status=405)
    raise NotFound(message)


def _plain_json(response: Response) -> Response:
    """Label the SDK's JSON answers ``application/json``: the A2A 1.0 specification's section 11.1 says the
    HTTP+JSON binding answers that type (the conformance kit checks it, HTTP_JSON-SVC-001), while a2a-sdk
    labels them ``application/a2a+json``. The body is left as it is; event streams keep their type."""
    if response.headers.get("content-type", "").startswith(A2A_JSON_MEDIA_TYPE):
        response.headers["content-type"] = "application/json"
    return response


def is_json(request: Request) -> bool:
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    return media in JSON_TYPES or (media.startswith("application/") and media.endswith("+json"))


def content_type_error(request: CheckedRequest) -> Response:
    """The JSON-RPC error for a body that is not declared as JSON; the id is kept when the body has one."""
    media = request.headers.get("content-type") or "none"
    error = ContentTypeNotSupportedError(message=f"Content-Type must be application/json, not {media}")
    return jsonrpc_error(request.request_id(), error)


def jsonrpc_error(request_id: str | int | None, error: A2AError | JSONRPCError) -> Response:
    """A JSON-RPC error response, with HTTP 200 as the SDK answers its own."""
    return JSONResponse(build_error_response(request_id, error), status_code=200)


def rest_error(error: A2AError) -> Response:
    """An HTTP+JSON binding error, in the SDK's payload and with the HTTP status it names."""
    payload = build_rest_error_payload(error)
    return JSONResponse(payload, status_code=int(payload["error"]["code"]))
