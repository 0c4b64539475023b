"""Which turns run where: the tasks of this process (so ``stop`` can cancel one and shutdown can interrupt
them all), and which worker owns each run (so a stop sent to any worker reaches the right one, and a
worker that died has its runs finished by another).

A run registers the task it runs in (a background task for the chat endpoints, the caller's own task
for A2A). Cancelling that task makes the engine save what was produced and end the stream; the reason
recorded here decides whether the message is ``stopped`` (the user asked) or ``interrupted`` (shutdown).

Ownership is a lease per run, named ``session:<id>`` (a turn of a session) or ``task:<id>`` (an A2A
task), taken before the database says the run exists and given back after it saved:

- ``MemoryLeases``: one process (the embedded default). A lease nobody in this process holds belongs
  to nobody, since no other process serves the instance.
- ``RedisLeases`` (``AGENTLOFT_REDIS_URL``): a key with a TTL per lease, renewed by the owner's
  heartbeat; a hash of every registered run, so a sweeper finds the runs of a worker that died; and a
  pub/sub channel per worker that carries stop requests (with a reply channel) to the owner.

A lease found missing is only believed after a second look one heartbeat later: a Redis that restarted
empty loses every lease at once, and the live owners put theirs back within a heartbeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import socket
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from agentloft.core.errors import Conflict
from agentloft.core.redis import UNREACHABLE, SharedRedis
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

# A control request: (op, payload) -> reply. The owner of a run answers it.
Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
# What to do with runs whose owner died, per kind of lease: called with their ids.
LostHandler = Callable[[list[str]], Awaitable[None]]


def session_lease(session_id: str) -> str:
    return f"session:{session_id}"


def task_lease(task_id: str) -> str:
    return f"task:{task_id}"


class NoReply(Exception):
    """The owner of a run got a control request but did not answer in time."""


class Leases(ABC):
    """Who owns which run, and a way to ask the owner of one to act on it."""

    worker_id: str
    shared: bool
    """Whether other workers may exist (and so own runs this process does not know of)."""
    ttl_s: float

    @abstractmethod
    async def start(self, handler: Handler) -> None:
        """Begin heartbeats and answer control requests with ``handler``."""

    @abstractmethod
    async def aclose(self) -> None:
        """Stop heartbeats; the leases still held run out after their TTL."""

    @abstractmethod
    async def acquire(self, name: str) -> bool:
        """Take ``name`` for this worker; False when a live worker (this one included) holds it."""

    @abstractmethod
    async def release(self, name: str) -> None:
        """Give ``name`` back (only if this worker still holds it). Never raises."""

    @abstractmethod
    async def owner(self, name: str) -> str | None:
        """The worker holding ``name``, None when nobody does."""

    @abstractmethod
    async def missing(self, names: list[str]) -> set[str]:
        """Of ``names``, those no live worker holds."""

    @abstractmethod
    async def orphans(self) -> list[str]:
        """Registered runs whose lease ran out (their worker died). Only other workers leave them."""

    @abstractmethod
    async def settle(self, name: str) -> bool:
        """Claim the right to finish the orphan ``name``: one worker wins (for a minute)."""

    @abstractmethod
    async def forget(self, name: str) -> None:
        """The orphan ``name`` is finished: drop it from the registered runs."""

    @abstractmethod
    async def request(self, worker: str, op: str, payload: dict[str, Any], limit_s: float) -> dict[str, Any] | None:
        """Ask ``worker`` to act; its reply, None when no such worker listens, ``NoReply`` after
        ``limit_s`` seconds."""


class MemoryLeases(Leases):
    """Leases of one process: held is owned, anything else belongs to nobody."""

    shared = False

    def __init__(self, ttl_s: float = 6.0) -> None:
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}"
        self.ttl_s = ttl_s
        self._held: set[str] = set()

    async def acquire(self, name: str) -> bool:
        if name in self._held:
            return False
        self._held.add(name)
        return True

    async def release(self, name: str) -> None:
        self._held.discard(name)

    async def owner(self, name: str) -> str | None:
        return self.worker_id if name in self._held else None

    async def missing(self, names: list[str]) -> set[str]:
        return {n for n in names if n not in self._held}

    async def start(self, handler: Handler) -> None:
        return None  # nothing to renew, nobody else to listen to

    async def aclose(self) -> None:
        self._held.clear()

    async def orphans(self) -> list[str]:
        return []  # a process that died took its memory along; the next start finishes its runs

    async def settle(self, name: str) -> bool:
        return True

    async def forget(self, name: str) -> None:
        return None

    async def request(self, worker: str, op: str, payload: dict[str, Any], limit_s: float) -> dict[str, Any] | None:
        return None  # no other worker


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

    def __init__(self, redis: SharedRedis, ttl_s: float) -> None:
        self.redis = redis
        self.ttl_s = ttl_s
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self._held: set[str] = set()
        self._loops: list[asyncio.Task[None]] = []
        self._handling: set[asyncio.Task[None]] = set()
        self._handler: Handler | None = None
        client = redis.client
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._renew = client.register_script(_RENEW)
        self._last_warning = 0.0

    def _lease(self, name: str) -> str:
        return self.redis.key("lease", name)

    @property
    def _runs(self) -> str:
        return self.redis.key("runs")

    def _channel(self, worker: str) -> str:
        return self.redis.key("ctl", worker)

    def _warn(self, what: str, exc: BaseException) -> None:
        now = time.monotonic()
        if now - self._last_warning > 30:
            self._last_warning = now
            log.warning("%s: Redis unreachable (%s); retrying", what, exc)

    async def start(self, handler: Handler) -> None:
        self._handler = handler
        self._loops = [asyncio.create_task(self._heartbeats()), asyncio.create_task(self._listen())]

    async def aclose(self) -> None:
        for loop in self._loops:
            loop.cancel()
        await asyncio.gather(*self._loops, *self._handling, return_exceptions=True)
        self._loops = []
        with contextlib.suppress(*UNREACHABLE):
            await self.redis.client.delete(self.redis.key("worker", self.worker_id))

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
            self._warn("releasing a run", exc)

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

    async def _heartbeats(self) -> None:
        """Say this worker is alive and renew its leases, every third of the TTL."""
        info = json.dumps({"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()})
        while True:
            try:
                pipe = self.redis.client.pipeline(transaction=False)
                pipe.set(self.redis.key("worker", self.worker_id), info, px=self._ttl_ms)
                held = list(self._held)
                for name in held:
                    await self._renew(keys=[self._lease(name)], args=[self.worker_id, self._ttl_ms], client=pipe)
                results = await pipe.execute()
                for name, renewed in zip(held, results[1:], strict=True):
                    if not renewed and name in self._held:
                        log.warning("run %s is owned by another worker now; this worker lost it", name)
            except UNREACHABLE as exc:
                self._warn("worker heartbeat", exc)
            await asyncio.sleep(self.ttl_s / 3)

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
                self._warn("control channel", exc)
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


# ------------------------------------------------------------------------------------------- registry


@dataclass
class RunRegistry:
    leases: Leases = field(default_factory=MemoryLeases)
    tasks: dict[str, asyncio.Task[object]] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)
    background: set[asyncio.Task[object]] = field(default_factory=set)
    shutting_down: bool = False
    # Session runs leased here but not entered yet (prepared, the background task not started).
    _claimed: dict[str, asyncio.Event] = field(default_factory=dict)
    _early_stops: set[str] = field(default_factory=set)
    _lost_handlers: dict[str, LostHandler] = field(default_factory=dict)
    _suspects: dict[str, float] = field(default_factory=dict)
    _sweeper: asyncio.Task[None] | None = None

    # --- ownership -----------------------------------------------------------------------------------

    async def claim(self, name: str) -> None:
        """Take the run's lease; ``Conflict session_busy`` when a live worker holds it."""
        if not await self.leases.acquire(name):
            raise Conflict("a reply is still being written in this session", code="session_busy")
        self._claimed[name] = asyncio.Event()

    async def release(self, name: str) -> None:
        released = self._claimed.pop(name, None)
        if released is not None:
            released.set()
        await self.leases.release(name)

    @contextlib.asynccontextmanager
    async def lease(self, name: str) -> AsyncIterator[None]:
        """Hold ``name`` while the block runs."""
        await self.claim(name)
        try:
            yield
        finally:
            await self.release(name)

    # --- this process's tasks ------------------------------------------------------------------------

    def enter(self, session_id: str) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks[session_id] = task
            if session_id in self._early_stops:  # a stop came in while the run was starting
                self._early_stops.discard(session_id)
                task.cancel()

    def leave(self, session_id: str) -> None:
        self.tasks.pop(session_id, None)
        self.reasons.pop(session_id, None)
        self._early_stops.discard(session_id)

    def is_running(self, session_id: str) -> bool:
        return session_id in self.tasks

    async def stop(self, session_id: str, wait_s: float = 10.0) -> bool:
        """Cancel the session's run and wait until it saved; False when nothing runs here."""
        task = self.tasks.get(session_id)
        if task is None:
            return await self._stop_starting(session_id, wait_s)
        self.reasons[session_id] = "stopped"
        task.cancel()
        await asyncio.wait([task], timeout=wait_s)
        return True

    async def _stop_starting(self, session_id: str, wait_s: float) -> bool:
        """A run leased here whose task has not started yet: it is cancelled as it enters."""
        released = self._claimed.get(session_lease(session_id))
        if released is None:
            return False
        self.reasons[session_id] = "stopped"
        self._early_stops.add(session_id)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(released.wait(), wait_s)
        return True

    async def stop_anywhere(self, session_id: str, wait_s: float = 10.0) -> bool | None:
        """Stop the session's run on whichever worker runs it. True/False as ``stop`` says; None when no
        live worker holds the run (it ended, or its worker died)."""
        if await self.stop(session_id, wait_s):
            return True
        owner = await self.leases.owner(session_lease(session_id))
        if owner is None or owner == self.leases.worker_id:
            return None
        try:
            reply = await self.leases.request(owner, "stop", {"session": session_id}, limit_s=wait_s + 2)
        except NoReply:
            log.warning("worker %s did not confirm the stop of %s", owner, session_id)
            return False
        return None if reply is None else bool(reply.get("stopped"))

    async def _on_request(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if op == "stop":
            return {"stopped": await self.stop(str(payload["session"]))}
        raise ValueError(f"unknown control request '{op}'")

    def spawn(self, coro: Coroutine[Any, Any, object]) -> asyncio.Task[object]:
        """Start a run in the background, keeping a reference so it is not garbage-collected."""
        task: asyncio.Task[object] = asyncio.create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    # --- runs whose worker died ----------------------------------------------------------------------

    def on_lost(self, kind: str, handler: LostHandler) -> None:
        """Register what finishes the runs of one kind (``session``, ``task``) whose worker died."""
        self._lost_handlers[kind] = handler

    async def lost(self, names: list[str]) -> set[str]:
        """Of ``names`` (runs the database says are running), those no live worker holds. With other
        workers about, a missing lease is looked at again one heartbeat later before it is believed."""
        missing = await self.leases.missing(names)
        if not missing or not self.leases.shared:
            return missing
        await asyncio.sleep(self.leases.ttl_s / 3 + 0.5)
        return await self.leases.missing(sorted(missing))

    async def start(self) -> None:
        """Heartbeats, control requests and, with other workers about, the sweep for their dead runs."""
        await self.leases.start(self._on_request)
        if self.leases.shared:
            self._sweeper = asyncio.create_task(self._sweep_loop())

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.leases.ttl_s / 3)
            try:
                await self.sweep()
            except UNREACHABLE as exc:
                log.debug("sweep skipped, Redis unreachable: %s", exc)
            except Exception:
                log.exception("sweeping the runs of dead workers failed")

    async def sweep(self) -> None:
        """Finish the runs whose lease has been missing for a heartbeat or more."""
        now = time.monotonic()
        orphans = set(await self.leases.orphans())
        self._suspects = {n: t for n, t in self._suspects.items() if n in orphans}
        confirmed: dict[str, list[str]] = {}
        for name in sorted(orphans):
            first = self._suspects.setdefault(name, now)
            if now - first >= self.leases.ttl_s / 3 and await self.leases.settle(name):
                kind, _, ident = name.partition(":")
                confirmed.setdefault(kind, []).append(ident)
                self._suspects.pop(name, None)
        for kind, ids in confirmed.items():
            handler = self._lost_handlers.get(kind)
            if handler is not None:
                log.warning("a worker died: finishing its %d %s run(s)", len(ids), kind)
                await handler(ids)
            for ident in ids:
                await self.leases.forget(f"{kind}:{ident}")

    async def shutdown(self, wait_s: float = 5.0) -> None:
        self.shutting_down = True
        if self._sweeper is not None:
            self._sweeper.cancel()
        tasks = list(self.tasks.values()) + list(self.background)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=wait_s)
        await self.leases.aclose()


def current_stop_reason(rt: Runtime, session_id: str) -> str:
    """``stopped`` (the user asked), ``interrupted`` (shutdown) or ``cancelled`` (the caller's own task
    was cancelled, e.g. an A2A timeout; saved like a stop, but the cancellation goes on up)."""
    runs = rt.runs
    if runs.shutting_down:
        return "interrupted"
    return runs.reasons.get(session_id, "cancelled")
