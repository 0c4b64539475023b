"""Request ids and the one log line per request, as a pure ASGI middleware.

Every request gets an id: the caller's ``X-Request-ID`` when it is sane (1 to 64 characters of letters,
digits and ``._:-``, which a proxy's or a load balancer's id is), else a new random one; anything else is
replaced, not refused, so a client with an odd header still gets its answer. The id is returned in
``X-Request-ID``, kept in a ``ContextVar`` for the request's task (the error bodies, the log lines and a
turn started by the request read it), and logged with one line when the response has ended: method, route
template (never the raw path, which holds ids), status, duration and the signed-in user's id. Bodies,
query strings and headers are never logged.

The middleware wraps the whole app, outside Starlette's server-error middleware, so even a 500 carries the
header; it only watches the messages that pass, never buffers them, so a chat's SSE stream flows through
chunk by chunk. A streamed response's duration is therefore the time to its last byte.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("agentloft.requests")

HEADER = "x-request-id"
_SANE_ID = re.compile(rb"[A-Za-z0-9._:-]{1,64}")
# The id of the request the current task serves; a turn's background task inherits it from the request
# that started it (asyncio copies the context into each new task).
_request_id: ContextVar[str | None] = ContextVar("agentloft_request_id", default=None)
# What a route template stands for when no route matched: one label for every unknown path, so a scanner
# cannot grow the metrics or fill the logs with paths of its choosing.
UNMATCHED = "(unmatched)"

# Called once per finished request with (method, route template, status, seconds): the metrics.
RequestObserver = Callable[[str, str, int, float], None]


def current_request_id() -> str | None:
    """The id of the request being served (or of the one that started this turn), None outside one."""
    return _request_id.get()


def accepted_id(raw: bytes | None) -> str:
    """The caller's id when it is sane, else a new one (32 hex digits)."""
    if raw is not None and _SANE_ID.fullmatch(raw):
        return raw.decode("ascii")
    return uuid.uuid4().hex


def _incoming_id(scope: Scope) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name == b"x-request-id":
            return value
    return None


def route_template(scope: Scope) -> str:
    """The matched route's path template (``/api/agents/{slug}/chat``), or ``UNMATCHED``."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return f"{scope.get('root_path', '')}{path}" if isinstance(path, str) else UNMATCHED


def _user_id(scope: Scope) -> str | None:
    """The signed-in caller's id, when the auth dependency looked them up (it keeps them on the request's
    state); None for anonymous requests and for those that never asked."""
    user: Any = (scope.get("state") or {}).get("user")
    uid = getattr(user, "id", None)
    return str(uid) if isinstance(uid, int | str) else None


class RequestIds:
    """Give each HTTP request an id, return it, and log the request once it has been answered."""

    def __init__(self, app: ASGIApp, observe: RequestObserver | None = None) -> None:
        self.app = app
        self.observe = observe

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = accepted_id(_incoming_id(scope))
        token = _request_id.set(rid)
        header = (b"x-request-id", rid.encode("ascii"))
        status = 500  # what the client gets when the app fails before it answers
        started = time.perf_counter()

        async def send_with_id(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*(h for h in message.get("headers", ()) if h[0].lower() != b"x-request-id"),
                                      header]
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            self._finished(scope, rid, status, time.perf_counter() - started)
            _request_id.reset(token)

    def _finished(self, scope: Scope, rid: str, status: int, seconds: float) -> None:
        method, route = scope.get("method", ""), route_template(scope)
        if self.observe is not None:
            self.observe(method, route, status, seconds)
        user = _user_id(scope)
        log.info("%s %s %s %.1f ms user=%s", method, route, status, seconds * 1000, user or "-",
                 extra={"requestId": rid, "method": method, "route": route, "status": status,
                        "durationMs": round(seconds * 1000, 2), "userId": user})
