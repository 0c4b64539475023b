"""Run leases in the Redis several workers share (``AGENTLOFT_REDIS_URL``); the interface and the
in-process leases are in ``chat.leases``.

A module of its own, imported by ``app.build_runtime`` only when a Redis is configured: the Redis client
library costs about 6 MB resident and 50 ms of start-up that one process on its own never uses.

Each lease is a key with a TTL, renewed by the owner's heartbeat; a hash of every registered run lets a
sweeper find the runs of a worker that died; a pub/sub channel per worker carries control requests (a
stop, with a reply channel) to the owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import threading
import time
import uuid
from collections.abc import Coroutine
from typing import Any

from redis import Redis as SyncRedis
from redis.exceptions import RedisError

from agentloft.chat.leases import Handler, Leases, NoReply
from agentloft.core.redis import CONNECT_TIMEOUT_S, UNREACHABLE, SharedRedis

log = logging.getLogger(__name__)


# Take a lease if free, and register the run so a sweeper can find it if this worker dies.
_ACQUIRE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  redis.call('HSET', KEYS[2], ARGV[3], ARGV[1])
  return 1
end
return 0
"""
# Give a lease back and unregister the run, if this worker still holds them.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end
if redis.call('HGET', KEYS[2], ARGV[2]) == ARGV[1] then redis.call('HDEL', KEYS[2], ARGV[2]) end
return 1
"""
# Renew a lease this worker holds (or put back one Redis lost); never take one another worker holds.
_RENEW = """
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] or not holder then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return 0
"""


class RedisLeases(Leases):
    """Leases as Redis keys with a TTL, renewed every third of it; control over pub/sub."""

    shared = True
    unreachable = UNREACHABLE

    def __init__(self, redis: SharedRedis, ttl_s: float) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._held: set[str] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._handling: set[asyncio.Task[None]] = set()
        self._handler: Handler | None = None
        self._heartbeat: _Heartbeat | None = None
        client = redis.client
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._last_warning = 0.0

    def _lease(self, name: str) -> str:
        return self.redis.key("lease", name)

    @property
    def _runs(self) -> str:
        return self.redis.key("runs")

    def _channel(self, worker: str) -> str:
        return self.redis.key("ctl", worker)

    def warn_unreachable(self, what: str, exc: BaseException) -> None:
        self.redis.on_error()
        now = time.monotonic()
        if now - self._last_warning > 30:
            self._last_warning = now
            log.warning("%s: Redis unreachable (%s); retrying", what, exc)

    async def start(self, handler: Handler) -> None:
        self._handler = handler
        self._heartbeat = _Heartbeat(self)
        self._heartbeat.start()
        self._loops = [asyncio.create_task(self._listen())]

    async def aclose(self) -> None:
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, *self._handling, return_exceptions=True)
        self._loops = []
        if self._heartbeat is not None:
            self._heartbeat.stop()
            await asyncio.to_thread(self._heartbeat.join, 10)
        with contextlib.suppress(*UNREACHABLE):
            await self.redis.client.delete(self.redis.key("worker", self.worker_id))

    def held(self) -> list[str]:
        """The leases to renew (read by the heartbeat's thread: a copy made in one step)."""
        return list(self._held.copy())

    # --- leases --------------------------------------------------------------------------------------

    @property
    def _ttl_ms(self) -> int:
        return int(self.ttl_s * 1000)

    async def acquire(self, name: str) -> bool:
        taken = await self._acquire(keys=[self._lease(name), self._runs], args=[self.worker_id, self._ttl_ms, name])
        if taken:
            self._held.add(name)
        return bool(taken)

    async def release(self, name: str) -> None:
        self._held.discard(name)
        try:
            await self._release(keys=[self._lease(name), self._runs], args=[self.worker_id, name])
        except UNREACHABLE as exc:  # the lease runs out by itself; a sweeper finds the run already ended
            self.warn_unreachable("releasing a run", exc)

    async def owner(self, name: str) -> str | None:
        holder = await self.redis.client.get(self._lease(name))
        return str(holder) if holder is not None else None

    async def missing(self, names: list[str]) -> set[str]:
        if not names:
            return set()
        holders = await self.redis.client.mget([self._lease(n) for n in names])
        return {n for n, holder in zip(names, holders, strict=True) if holder is None}

    async def orphans(self) -> list[str]:
        registered = [str(name) for name in await self.redis.client.hkeys(self._runs)]
        return sorted(await self.missing(registered))

    async def settle(self, name: str) -> bool:
        claimed = await self.redis.client.set(self.redis.key("swept", name), self.worker_id, nx=True, px=60_000)
        return bool(claimed)

    async def forget(self, name: str) -> None:
        await self.redis.client.hdel(self._runs, name)

    # --- control -------------------------------------------------------------------------------------

    async def _listen(self) -> None:
        """Answer control requests on this worker's channel, resubscribing after Redis comes back."""
        while True:
            try:
                async with self.redis.client.pubsub() as pubsub:
                    await pubsub.subscribe(self._channel(self.worker_id))
                    while True:
                        message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=None)
                        if message is not None and message.get("type") == "message":
                            self._spawn(self._answer(str(message["data"])))
            except UNREACHABLE as exc:
                self.warn_unreachable("control channel", exc)
                await asyncio.sleep(1)
            except Exception:  # never stop answering: stops sent to this worker would go unheard
                log.exception("the control channel failed; subscribing again")
                await asyncio.sleep(1)

    def _spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(coro)
        self._handling.add(task)
        task.add_done_callback(self._handling.discard)

    async def _answer(self, raw: str) -> None:
        try:
            request = json.loads(raw)
            assert self._handler is not None
            reply = await self._handler(str(request["op"]), dict(request.get("payload") or {}))
            await self.redis.client.publish(str(request["reply"]), json.dumps(reply))
        except Exception:
            log.exception("a control request failed: %s", raw[:200])

    async def request(self, worker: str, op: str, payload: dict[str, Any], limit_s: float) -> dict[str, Any] | None:
        reply_to = self.redis.key("reply", uuid.uuid4().hex)
        async with self.redis.client.pubsub() as pubsub:
            await pubsub.subscribe(reply_to)
            message = json.dumps({"op": op, "payload": payload, "reply": reply_to})
            if not await self.redis.client.publish(self._channel(worker), message):
                return None
            deadline = time.monotonic() + limit_s
            while (left := deadline - time.monotonic()) > 0:
                got = await pubsub.get_message(ignore_subscribe_messages=True, timeout=left)
                if got is not None and got.get("type") == "message":
                    return dict(json.loads(got["data"]))
        raise NoReply(f"worker {worker} did not answer '{op}' within {limit_s:g} s")


class _Heartbeat(threading.Thread):
    """Says the worker is alive and renews its leases every third of the TTL, from a thread of its own
    with a client of its own: a worker whose event loop is saturated (hundreds of streams at once; it once
    renewed seconds late and lost live runs to a sweeper) still renews on time, and a worker that dies
    takes the thread along, so its leases run out as they should."""

    def __init__(self, leases: RedisLeases) -> None:
        super().__init__(name="agentloft-leases", daemon=True)
        self.leases = leases
        self.client = SyncRedis.from_url(leases.redis.url, decode_responses=True,
                                         socket_connect_timeout=CONNECT_TIMEOUT_S, socket_timeout=leases.ttl_s / 3)
        self.renew = self.client.register_script(_RENEW)
        self.info = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()})
        self.stopped = threading.Event()

    def stop(self) -> None:
        self.stopped.set()

    def run(self) -> None:
        try:
            while not self.stopped.is_set():
                self.beat()
                self.stopped.wait(self.leases.ttl_s / 3)
        finally:
            self.client.close()

    def beat(self) -> None:
        leases = self.leases
        ttl_ms = int(leases.ttl_s * 1000)
        try:
            pipe = self.client.pipeline(transaction=False)
            pipe.set(leases.redis.key("worker", leases.worker_id), self.info, px=ttl_ms)
            held = leases.held()
            for name in held:
                self.renew(keys=[leases.redis.key("lease", name)], args=[leases.worker_id, ttl_ms], client=pipe)
            results = pipe.execute()
            for name, renewed in zip(held, results[1:], strict=True):
                if not renewed:
                    log.warning("run %s is owned by another worker now; this worker lost it", name)
        except (RedisError, OSError) as exc:
            leases.warn_unreachable("worker heartbeat", exc)
        except Exception:  # never let the heartbeat die: the worker's runs would be taken from it
            log.exception("worker heartbeat failed")
