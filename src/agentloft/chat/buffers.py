"""Stream buffers: the chunks of each running turn, kept so any number of readers can replay and follow.

A run writes encoded SSE frames into the buffer under its key (a session id, or ``a2a_<taskId>``); HTTP
responses only read. That is what lets a run outlive the connection that started it and lets a reloaded
page pick the stream up where it is. ``StreamBuffers`` is the interface; nothing outside this module
touches a buffer's internals.

- ``MemoryStreamBuffers`` keeps them in this process (one process, the embedded default).
- ``RedisStreamBuffers`` (``chat.buffers_redis``, ``AGENTLOFT_REDIS_URL``) keeps one Redis stream per
  key, so a reader on any worker can follow a run that another worker writes. It lives in a module of
  its own so that a process without Redis never imports the client library (about 6 MB resident).

A reader that falls behind gets every pending frame joined into one string, so a slow client costs one
socket write per wake-up instead of one per chunk.
"""

from __future__ import annotations

import asyncio
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any


class StreamBuffers(ABC):
    """Chunk buffers keyed by plain strings. One run per key at a time; ``open`` starts a new one."""

    @abstractmethod
    async def open(self, key: str, meta: dict[str, Any] | None = None) -> None:
        """Start a new run under ``key``, replacing whatever an earlier run left there."""

    @abstractmethod
    async def append(self, key: str, chunk: str) -> None:
        """Add one encoded frame; readers following the key get it at once. Never raises: a run goes on
        (and saves its reply) even when its readers cannot be reached."""

    @abstractmethod
    async def close(self, key: str, *, error: str | None = None) -> None:
        """Mark the run done (or failed); the buffer is dropped after the grace period. Never raises."""

    @abstractmethod
    async def is_active(self, key: str) -> bool:
        """Whether a run is writing under ``key`` now."""

    @abstractmethod
    async def meta(self, key: str) -> dict[str, Any] | None:
        """What the writer attached on ``open``, or None when there is no buffer."""

    @abstractmethod
    async def wait_open(self, key: str, limit_s: float) -> bool:
        """Wait until a buffer exists under ``key`` (at once if one does); False after ``limit_s`` seconds.
        For readers that learn a key before its run has opened it (the A2A relay, the side panel)."""

    @abstractmethod
    def subscribe(self, key: str) -> AsyncIterator[str]:
        """Every frame of the current run from the start, then live ones until the run is done.
        Ends at once when there is no buffer."""


# --------------------------------------------------------------------------------------------- memory


@dataclass
class _Buffer:
    meta: dict[str, Any]
    chunks: list[str] = field(default_factory=list)
    done: bool = False
    error: str | None = None
    waiters: int = 0
    event: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        if self.waiters:
            self.event.set()
            self.event = asyncio.Event()


class MemoryStreamBuffers(StreamBuffers):
    """Buffers in this process's memory, dropped ``grace_seconds`` after their run ends."""

    def __init__(self, grace_seconds: float = 60.0) -> None:
        self.grace_seconds = grace_seconds
        self._buffers: dict[str, _Buffer] = {}
        self._openers: dict[str, list[asyncio.Future[None]]] = {}

    async def open(self, key: str, meta: dict[str, Any] | None = None) -> None:
        old = self._buffers.get(key)
        if old is not None and not old.done:
            old.done = True
            old.wake()
        self._buffers[key] = _Buffer(meta=dict(meta or {}))
        for waiter in self._openers.pop(key, ()):
            if not waiter.done():
                waiter.set_result(None)

    async def append(self, key: str, chunk: str) -> None:
        buf = self._buffers.get(key)
        if buf is None or buf.done:
            return
        buf.chunks.append(chunk)
        buf.wake()

    async def close(self, key: str, *, error: str | None = None) -> None:
        buf = self._buffers.get(key)
        if buf is None or buf.done:
            return
        buf.done = True
        buf.error = error
        buf.wake()
        asyncio.get_running_loop().call_later(self.grace_seconds, self._drop, key, buf)

    def _drop(self, key: str, buf: _Buffer) -> None:
        if self._buffers.get(key) is buf:
            del self._buffers[key]

    async def is_active(self, key: str) -> bool:
        buf = self._buffers.get(key)
        return buf is not None and not buf.done

    async def meta(self, key: str) -> dict[str, Any] | None:
        buf = self._buffers.get(key)
        return None if buf is None else dict(buf.meta)

    async def wait_open(self, key: str, limit_s: float) -> bool:
        if key in self._buffers:
            return True
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._openers.setdefault(key, []).append(waiter)
        try:
            await asyncio.wait_for(asyncio.shield(waiter), limit_s)
            return True
        except TimeoutError:
            return False
        finally:
            waiters = self._openers.get(key)
            if waiters is not None and waiter in waiters:
                waiters.remove(waiter)
                if not waiters:
                    del self._openers[key]

    def keys(self) -> list[str]:
        return list(self._buffers)

    async def subscribe(self, key: str) -> AsyncIterator[str]:
        buf = self._buffers.get(key)
        if buf is None:
            return
        sent = 0
        while True:
            count = len(buf.chunks)
            if sent < count:
                out = buf.chunks[sent] if count - sent == 1 else "".join(buf.chunks[sent:count])
                sent = count
                yield out
                continue
            if buf.done:
                return
            buf.waiters += 1
            try:
                await buf.event.wait()
            finally:
                buf.waiters -= 1
