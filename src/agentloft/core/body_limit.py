"""The request body limit, answered in the one error shape.

Starlette's limiter (FastAPI's ``max_body_size``) answers a body declared too long in plain text, and it
replaces whatever response the app starts with that plain text too, so no handler of ours can answer in
its place. This middleware does the same two checks itself: a ``Content-Length`` past the limit is refused
before the app runs (nothing is read), and a body sent in chunks is cut off where it passes the limit (the
read raises ``PayloadTooLarge``, which the error handlers answer; when a middleware was the reader, it is
answered here). ``PayloadTooLarge`` is an HTTP exception, not an ``AppError``: FastAPI passes those on
from a body read, where it would turn any other exception into a 400 "error parsing the body".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentloft.core.errors import http_error_response


class PayloadTooLarge(HTTPException):
    """A 413; the error handlers give it the code ``payload_too_large``, or the route's own (``code``)."""

    def __init__(self, limit: int, *, code: str | None = None, message: str | None = None) -> None:
        super().__init__(413, message or f"the request body exceeds the limit of {limit} bytes")
        self.limit = limit
        self.code = code


@dataclass(frozen=True)
class RouteLimit:
    """Another limit for one route (uploads: larger than the API's), answered with the route's own code and
    words, the same whether the body was declared too long or turned out so."""

    method: str
    path: str
    max_bytes: int
    code: str
    message: str


def _declared_length(scope: Scope) -> int | None:
    try:
        return int(Headers(scope=scope).get("content-length", ""))
    except ValueError:
        return None


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` (or their route's ``RouteLimit``) with a JSON 413."""

    def __init__(self, app: ASGIApp, max_bytes: int, routes: Sequence[RouteLimit] = ()) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.routes = {(r.method, r.path.rstrip("/")): r for r in routes}

    def _refusal(self, scope: Scope) -> PayloadTooLarge:
        route = self.routes.get((scope.get("method", ""), scope["path"].rstrip("/")))
        if route is None:
            return PayloadTooLarge(self.max_bytes)
        return PayloadTooLarge(route.max_bytes, code=route.code, message=route.message)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refusal = self._refusal(scope)
        limit = refusal.limit
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            await http_error_response(refusal)(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise refusal
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, limited_receive, tracked_send)
        except PayloadTooLarge as exc:
            if started:
                raise
            await http_error_response(exc)(scope, receive, send)
