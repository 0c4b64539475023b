"""Double-submit CSRF protection as a pure ASGI middleware (it must not buffer streamed responses).

Every response to a browser without the readable ``agentloft_csrf`` cookie gets one. Any request but
GET, HEAD, OPTIONS and TRACE that carries the session cookie and no bearer token must echo that cookie
in the ``X-CSRF-Token`` header, or it is refused with 403 before any handler runs. Bearer-token clients
are not exposed to CSRF (browsers never add that header by themselves) and need no token.

The middleware reads cookies and the bearer token exactly as authentication does
(``HTTPConnection.cookies``, ``auth.dependencies.bearer_token``): a second parser that disagreed with
authentication's on an odd Cookie header (``[x=1; agentloft_session=…`` made ``SimpleCookie`` give up)
let a cross-site write through with the session but without the token.
"""

from __future__ import annotations

import hmac
import json
import secrets

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentloft.auth.dependencies import CSRF_COOKIE, CSRF_HEADER, SESSION_COOKIE, bearer_token
from agentloft.core.errors import error_fields

_SAFE = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})


class CSRFMiddleware:
    def __init__(self, app: ASGIApp, *, secure: bool = False) -> None:
        self.app = app
        self.secure = secure

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        cookies = connection.cookies
        if scope["method"] not in _SAFE and SESSION_COOKIE in cookies and bearer_token(connection) is None:
            expected = cookies.get(CSRF_COOKIE, "")
            given = connection.headers.get(CSRF_HEADER, "")
            if not expected or not hmac.compare_digest(expected.encode(), given.encode()):
                await self._refuse(send)
                return
        if CSRF_COOKIE in cookies:
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, self._adding_cookie(send))

    def _adding_cookie(self, send: Send) -> Send:
        value = secrets.token_urlsafe(24)
        attrs = f"{CSRF_COOKIE}={value}; Path=/; SameSite=Lax" + ("; Secure" if self.secure else "")

        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"set-cookie", attrs.encode())]
            await send(message)

        return wrapped

    @staticmethod
    async def _refuse(send: Send) -> None:
        body = json.dumps(
            {"error": error_fields("csrf_failed", "missing or wrong X-CSRF-Token header")}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
