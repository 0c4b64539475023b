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

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentloft.core.errors import http_error_response


class PayloadTooLarge(HTTPException):
    """A 413; the error handlers give it the code ``payload_too_large``."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"the request body exceeds the limit of {limit} bytes")


def _declared_length(scope: Scope) -> int | None:
    try:
        return int(Headers(scope=scope).get("content-length", ""))
    except ValueError:
        return None


class BodyLimit:
    """Refuse request bodies over ``max_bytes`` with a JSON 413."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _declared_length(scope)
        if declared is not None and declared > self.max_bytes:
            await http_error_response(PayloadTooLarge(self.max_bytes))(scope, receive, send)
            return
        received = 0
        started = False

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_bytes:
                    raise PayloadTooLarge(self.max_bytes)
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
