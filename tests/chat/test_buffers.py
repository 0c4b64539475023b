"""The stream buffers, in memory and on Redis (``AGENTLOFT_TEST_REDIS_URL``): replay then follow, several
readers, a new run per key, the grace drop, the "opened" signal, and on Redis a reader in another
process (another client) following what this one writes.

No test here sleeps for a fixed time: each waits for the condition it needs (a reader has received a
frame, the buffer is gone), with a time limit that fails the test instead of hanging it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentloft.chat.buffers import MemoryStreamBuffers, StreamBuffers
from agentloft.chat.buffers_redis import RedisStreamBuffers
from agentloft.core.redis import SharedRedis, connect
from tests import redis_db
from tests.support import wait_until

LIMIT_S = 5.0  # how long a reader may take to end before the test fails


class Buffers:
    """Makes buffers of one kind; on Redis every one made shares the test's key prefix, as workers do."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.prefix = redis_db.new_prefix()
        self.shared: list[SharedRedis] = []

    def make(self, grace_seconds: float) -> StreamBuffers:
        if self.kind == "memory":
            return MemoryStreamBuffers(grace_seconds)
        shared = connect(redis_db.server_url() or "", self.prefix)
        self.shared.append(shared)
        return RedisStreamBuffers(shared, grace_seconds)

    async def aclose(self) -> None:
        for shared in self.shared:
            await shared.aclose()


@pytest.fixture(params=["memory", "redis"])
async def kind(request: pytest.FixtureRequest) -> AsyncIterator[Buffers]:
    if request.param == "redis" and not redis_db.server_url():
        pytest.skip(f"needs {redis_db.ENV}")
    made = Buffers(request.param)
    yield made
    await made.aclose()
    if request.param == "redis":
        redis_db.delete_prefix(redis_db.server_url() or "", made.prefix)


async def _collect(buffers: StreamBuffers, key: str, got: list[str] | None = None) -> str:
    frames = got if got is not None else []
    async for piece in buffers.subscribe(key):
        frames.append(piece)
    return "".join(frames)


async def test_replay_follow_and_grace_drop(kind: Buffers) -> None:
    buffers = kind.make(grace_seconds=0.3)
    assert await _collect(buffers, "none") == ""
    await buffers.open("k", {"sessionId": "k"})
    await buffers.append("k", "a")
    early_got: list[str] = []
    early = asyncio.create_task(_collect(buffers, "k", early_got))
    await wait_until(lambda: early_got == ["a"])  # replayed; from here on it follows live
    await buffers.append("k", "b")
    late = asyncio.create_task(_collect(buffers, "k"))
    await buffers.append("k", "c")
    assert await buffers.is_active("k")
    await buffers.close("k")
    assert await early == "abc" and await late == "abc"
    assert not await buffers.is_active("k")
    assert await _collect(buffers, "k") == "abc"  # still replayable during the grace period
    await buffers.append("k", "ignored after close")
    assert await _collect(buffers, "k") == "abc"

    async def dropped() -> bool:
        return await buffers.meta("k") is None

    await wait_until(dropped)
    assert await _collect(buffers, "k") == ""


async def test_a_new_run_replaces_the_old_one_and_ends_its_readers(kind: Buffers) -> None:
    buffers = kind.make(grace_seconds=10)
    await buffers.open("k")
    await buffers.append("k", "old")
    got: list[str] = []
    reader = asyncio.create_task(_collect(buffers, "k", got))
    await wait_until(lambda: got == ["old"])  # the reader follows the first run
    await buffers.open("k", {"run": 2})
    await buffers.append("k", "new")
    assert await asyncio.wait_for(reader, LIMIT_S) == "old"
    assert await buffers.meta("k") == {"run": 2}
    await buffers.close("k")
    assert await _collect(buffers, "k") == "new"


async def test_wait_open_wakes_when_the_run_opens(kind: Buffers) -> None:
    buffers = kind.make(grace_seconds=10)
    assert not await buffers.wait_open("later", limit_s=0.05)
    waiting = asyncio.create_task(buffers.wait_open("later", limit_s=5))
    await asyncio.sleep(0.05)
    assert not waiting.done()
    await buffers.open("later", {"n": 1})
    assert await asyncio.wait_for(waiting, 5)
    assert await buffers.wait_open("later", limit_s=0)


async def test_a_reader_elsewhere_follows_the_writer(kind: Buffers) -> None:
    """Two ``RedisStreamBuffers`` are two workers: one writes, the other replays and follows live, learns
    that the run is active, and ends with the run. In memory there is one process, so one object."""
    writer = kind.make(grace_seconds=10)
    reader = kind.make(grace_seconds=10) if kind.kind == "redis" else writer
    opened = asyncio.create_task(reader.wait_open("k", limit_s=5))
    await writer.open("k", {"sessionId": "s1"})
    assert await asyncio.wait_for(opened, 5)
    await writer.append("k", "data: 1\n\n")
    await writer.append("k", "data: 2\n\n")

    async def active() -> bool:
        return await reader.is_active("k")

    await wait_until(active)
    assert await reader.meta("k") == {"sessionId": "s1"}
    follow = asyncio.create_task(_collect(reader, "k"))
    for i in range(3, 50):
        await writer.append("k", f"data: {i}\n\n")
    await writer.close("k", error="boom")
    assert await asyncio.wait_for(follow, 5) == "".join(f"data: {i}\n\n" for i in range(1, 50))
    assert not await reader.is_active("k")
    assert await _collect(reader, "k") == "".join(f"data: {i}\n\n" for i in range(1, 50))


async def test_ending_a_run_twice_writes_one_end(kind: Buffers) -> None:
    """Whoever ends a run (its writer, or another worker sweeping up after a crash) ends it once: a second
    close, also from another worker, changes nothing and a later reader still gets every frame."""
    writer = kind.make(grace_seconds=10)
    other = kind.make(grace_seconds=10) if kind.kind == "redis" else writer
    await writer.open("k")
    await writer.append("k", "a")
    await other.append("k", "b")
    await other.close("k", error="the worker died")
    await writer.close("k")
    await other.close("k")
    assert await _collect(writer, "k") == "ab"
    assert await _collect(other, "k") == "ab"
