"""The Redis that several workers share (``AGENTLOFT_REDIS_URL``): one client per process, and the key names.

Why one client: redis-py's asyncio client keeps a pool of connections and reconnects by itself, so a
worker whose Redis went away recovers on its own once Redis answers again; until then the calls that
need it raise ``redis.exceptions.ConnectionError`` / ``TimeoutError``, which the handler installed by
``install_error_handler`` turns into ``503 redis_unavailable``. Blocking reads (``XREAD BLOCK``) hold a connection
each while they wait, so the pool is not capped.

Every key and channel starts with ``AGENTLOFT_REDIS_PREFIX`` so several instances (or test runs) can
share one Redis without seeing each other.

URLs: ``redis://[:password@]host:port/db``, ``rediss://…`` for TLS (the certificate is checked against
the system's CAs; ``?ssl_cert_reqs=none`` turns that off for a self-signed test server), ``unix://…``.

Only a process with ``AGENTLOFT_REDIS_URL`` set imports this module (and the Redis-backed stores:
``chat.buffers_redis``, ``chat.leases_redis``, ``auth.throttle_redis``); ``app`` picks them at start-up.
The client library costs about 6 MB resident and 50 ms of start-up (measured on top of what the app
imports anyway) that one process on its own never uses.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from agentloft.core.errors import Unavailable, error_response

log = logging.getLogger(__name__)

# The errors that mean "Redis cannot be reached now" (as opposed to a bad command, which is a bug).
UNREACHABLE = (RedisConnectionError, RedisTimeoutError)
REDIS_DOWN = "the shared store (Redis) cannot be reached; try again in a moment"

# A blocking read waits at most this long per call; the socket timeout must be longer.
BLOCK_MS = 5_000
_SOCKET_TIMEOUT_S = 15.0
CONNECT_TIMEOUT_S = 3.0


@dataclass(eq=False)
class SharedRedis:
    """The client and the instance's key prefix."""

    client: Redis
    prefix: str
    url: str
    """For a synchronous client of a thread's own (the run leases' heartbeat)."""
    on_error: Callable[[], None] = field(default=lambda: None)
    """Called each time Redis could not be reached (the metrics' ``redis_errors_total``)."""

    def key(self, *parts: str) -> str:
        """``<prefix>:<part>:<part>…``, the one way key and channel names are made."""
        return ":".join((self.prefix, *parts))

    async def aclose(self) -> None:
        await self.client.aclose()


def connect(url: str, prefix: str) -> SharedRedis:
    """A client for ``url``; nothing is sent until the first command (so start-up never waits on it)."""
    client = Redis.from_url(
        url,
        decode_responses=True,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
        socket_timeout=_SOCKET_TIMEOUT_S,
        health_check_interval=30,
        client_name="agentloft",
        max_connections=10_000,  # one per reader blocked in XREAD; redis-py refuses beyond the cap
    )
    return SharedRedis(client=client, prefix=prefix, url=url)


def install_error_handler(app: FastAPI) -> None:
    """Answer ``503 redis_unavailable`` (in the one error shape) when a request needs Redis and cannot
    reach it, rather than a 500: the same request works again once Redis is back."""

    async def _redis_down(request: Request, exc: Exception) -> JSONResponse:
        log.warning("%s %s: Redis unreachable: %s", request.method, request.url.path, exc)
        redis = request.app.state.runtime.redis
        if redis is not None:
            redis.on_error()
        return error_response(Unavailable(REDIS_DOWN, code="redis_unavailable"))

    for redis_error in UNREACHABLE:
        app.add_exception_handler(redis_error, _redis_down)
