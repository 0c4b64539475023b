"""The Redis that several workers share (``AGENTLOFT_REDIS_URL``): one client per process, and the key names.

Why one client: redis-py's asyncio client keeps a pool of connections and reconnects by itself, so a
worker whose Redis went away recovers on its own once Redis answers again; until then the calls that
need it raise ``redis.exceptions.ConnectionError`` / ``TimeoutError``, which the error handlers turn
into ``503 redis_unavailable`` (``core.errors``). Blocking reads (``XREAD BLOCK``) hold a connection
each while they wait, so the pool is not capped.

Every key and channel starts with ``AGENTLOFT_REDIS_PREFIX`` so several instances (or test runs) can
share one Redis without seeing each other.

URLs: ``redis://[:password@]host:port/db``, ``rediss://…`` for TLS (the certificate is checked against
the system's CAs; ``?ssl_cert_reqs=none`` turns that off for a self-signed test server), ``unix://…``.
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

# The errors that mean "Redis cannot be reached now" (as opposed to a bad command, which is a bug).
UNREACHABLE = (RedisConnectionError, RedisTimeoutError)

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
