"""Stream buffers in the Redis several workers share (``AGENTLOFT_REDIS_URL``); the interface and the
in-process buffers are in ``chat.buffers``.

A module of its own, imported by ``app.build_runtime`` only when a Redis is configured: the Redis client
library costs about 6 MB resident and 50 ms of start-up that one process on its own never uses.

One Redis stream per key, so a reader on any worker can follow a run that another worker writes: an
``open`` entry with the writer's meta, frame entries, an ``end`` entry; readers ``XREAD BLOCK`` from their
last id; the stream expires ``AGENTLOFT_STREAM_GRACE_SECONDS`` after its end. The writer's own process
also keeps the run in memory, so the readers beside the writer (the browser that started the chat,
almost always) follow it without a round trip to Redis.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from redis.asyncio.client import Pipeline

from agentloft.chat.buffers import MemoryStreamBuffers, StreamBuffers
from agentloft.core.redis import BLOCK_MS, SharedRedis

log = logging.getLogger(__name__)

# Entry fields: ``t`` (type: open / frames / end), then ``m`` (meta JSON), ``d`` (frames) or ``e`` (error).
_OPEN, _FRAMES, _END = "o", "f", "e"
# A stream lives at most this long while its run is writing (a run that was never ended: its writer died
# and nobody swept it); after the end it lives for the grace period.
_RUN_TTL_S = 24 * 3600
# Appenders wait for the writer when this many frames are queued and not yet sent (Redis is slow).
_MAX_QUEUED = 20_000

# A stream entry as redis-py returns it with ``decode_responses`` (RESP2): (id, {field: value}).
Entry = tuple[str, dict[str, str]]


def _entries(raw: Any) -> list[Entry]:
    """The entries of an XRANGE / XREVRANGE reply."""
    return [(str(entry_id), {str(k): str(v) for k, v in (fields or {}).items()}) for entry_id, fields in raw or ()]


def _read(raw: Any) -> list[Entry]:
    """The entries of an XREAD reply on one stream (None or empty when nothing came)."""
    return _entries(raw[0][1]) if raw else []


# Add the end entry unless the stream is missing or already ended: a run is ended once, whoever ends it.
_END_SCRIPT = """
local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
if #last == 0 or last[1][2][2] == 'e' then return 0 end
redis.call('XADD', KEYS[1], '*', 't', 'e', 'e', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
"""


@dataclass
class _Op:
    """One queued write for a key: an open, frames (joined when sent), or an end."""

    kind: str
    data: list[str] = field(default_factory=list)
    done: asyncio.Future[None] | None = None


class RedisStreamBuffers(StreamBuffers):
    """One Redis stream per key; the writing process also keeps its runs in memory for local readers.

    Writes are queued and sent by one writer task per process as a pipeline: every frame queued since the
    last send goes out as one ``XADD`` per key (``JOIN_FRAMES``; ``bench/scale_out.py`` measured this
    against an entry per frame), so 50 chats streaming at once cost one round trip per event-loop turn
    rather than one per chunk. ``open`` and ``close`` wait until their entry is written."""

    JOIN_FRAMES = True

    def __init__(self, redis: SharedRedis, grace_seconds: float = 60.0) -> None:
        self.redis = redis
        self.grace_seconds = grace_seconds
        self._local = MemoryStreamBuffers(grace_seconds)
        self._queue: dict[str, list[_Op]] = {}
        self._queued = 0
        self._writer: asyncio.Task[None] | None = None
        self._drained = asyncio.Event()
        self._end = redis.client.register_script(_END_SCRIPT)
        self._last_warning = 0.0

    def _key(self, key: str) -> str:
        return self.redis.key("buf", key)

    # --- writing -------------------------------------------------------------------------------------

    def _enqueue(self, key: str, op: _Op) -> None:
        ops = self._queue.setdefault(key, [])
        if op.kind == _FRAMES and ops and ops[-1].kind == _FRAMES:
            ops[-1].data.extend(op.data)
        else:
            ops.append(op)
        self._queued += len(op.data) or 1
        if self._writer is None or self._writer.done():
            self._drained.clear()
            self._writer = asyncio.create_task(self._write_loop())

    async def _wait(self, key: str, kind: str, data: list[str]) -> None:
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._enqueue(key, _Op(kind, data, done))
        await done

    async def _write_loop(self) -> None:
        while self._queue:
            batch, self._queue, self._queued = self._queue, {}, 0
            pipe = self.redis.client.pipeline(transaction=False)
            waiting = [op.done for ops in batch.values() for op in ops if op.done is not None]
            for key, ops in batch.items():
                for op in ops:
                    await self._add(pipe, self._key(key), op)
            try:
                await pipe.execute()
            except Exception as exc:
                self._warn(exc)
                for fut in waiting:
                    if not fut.done():
                        fut.set_exception(exc)
                continue
            for fut in waiting:
                if not fut.done():
                    fut.set_result(None)
        self._drained.set()

    async def _add(self, pipe: Pipeline, rkey: str, op: _Op) -> None:
        if op.kind == _OPEN:
            pipe.delete(rkey)
            pipe.xadd(rkey, {"t": _OPEN, "m": op.data[0]})
            pipe.expire(rkey, _RUN_TTL_S)
        elif op.kind == _FRAMES:
            frames = ["".join(op.data)] if self.JOIN_FRAMES else op.data
            for data in frames:
                pipe.xadd(rkey, {"t": _FRAMES, "d": data}, nomkstream=True)
        else:
            await self._end(keys=[rkey], args=[op.data[0], max(1, round(self.grace_seconds * 1000))], client=pipe)

    def _warn(self, exc: BaseException) -> None:
        self.redis.on_error()
        now = time.monotonic()
        if now - self._last_warning > 30:
            self._last_warning = now
            log.warning("stream buffers cannot reach Redis (%s); readers on other workers miss frames", exc)

    async def open(self, key: str, meta: dict[str, Any] | None = None) -> None:
        await self._wait(key, _OPEN, [json.dumps(meta or {})])
        await self._local.open(key, meta)

    async def append(self, key: str, chunk: str) -> None:
        await self._local.append(key, chunk)
        self._enqueue(key, _Op(_FRAMES, [chunk]))
        if self._queued > _MAX_QUEUED:
            await self._drained.wait()

    async def close(self, key: str, *, error: str | None = None) -> None:
        await self._local.close(key, error=error)
        try:
            await self._wait(key, _END, [error or ""])
        except Exception as exc:  # logged by the writer; the run's reply is saved regardless
            log.debug("could not end the stream of %s: %s", key, exc)

    # --- reading -------------------------------------------------------------------------------------

    async def is_active(self, key: str) -> bool:
        if await self._local.is_active(key):
            return True
        last = _entries(await self.redis.client.xrevrange(self._key(key), count=1))
        return bool(last) and last[0][1].get("t") != _END

    async def meta(self, key: str) -> dict[str, Any] | None:
        if await self._local.is_active(key):
            return await self._local.meta(key)
        first = _entries(await self.redis.client.xrange(self._key(key), count=1))
        if not first or first[0][1].get("t") != _OPEN:
            return None
        return dict(json.loads(first[0][1]["m"]))

    async def wait_open(self, key: str, limit_s: float) -> bool:
        if await self._local.is_active(key):
            return True
        deadline = time.monotonic() + limit_s
        rkey = self._key(key)
        while True:
            left_ms = int((deadline - time.monotonic()) * 1000)
            found = await self.redis.client.xread({rkey: "0-0"}, count=1, block=max(1, min(left_ms, BLOCK_MS)))
            if found:
                return True
            if left_ms <= BLOCK_MS:
                return False

    async def subscribe(self, key: str) -> AsyncIterator[str]:
        if await self._local.is_active(key):
            async for frames in self._local.subscribe(key):
                yield frames
            return
        async for frames in self._follow(self._key(key)):
            yield frames

    async def _follow(self, rkey: str) -> AsyncIterator[str]:
        """Replay the stream, then follow it until its end entry (or a newer run's open entry)."""
        client = self.redis.client
        last, started = "0-0", False
        while True:
            found = _read(await client.xread({rkey: last}, block=BLOCK_MS if started else None))
            if not found:
                if not started or not await client.exists(rkey):
                    return  # no buffer, or it expired (or Redis lost it) while we waited
                continue
            out: list[str] = []
            for entry_id, fields in found:
                last = entry_id
                kind = fields.get("t")
                if kind == _FRAMES:
                    out.append(fields.get("d", ""))
                elif kind == _END or (kind == _OPEN and started):
                    if out:
                        yield "".join(out)
                    return
                started = True
            if out:
                yield "".join(out)
