"""The in-process stream buffers: replay then follow, several readers, a new run per key, grace drop.

No test here sleeps for a fixed time: each waits for the condition it needs (a reader has received a
frame, the buffer is gone), with a time limit that fails the test instead of hanging it."""

from __future__ import annotations

import asyncio

from agentloft.chat.buffers import MemoryStreamBuffers
from tests.support import wait_until

LIMIT_S = 5.0  # how long a reader may take to end before the test fails


async def _collect(buffers: MemoryStreamBuffers, key: str, got: list[str] | None = None) -> str:
    frames = got if got is not None else []
    async for piece in buffers.subscribe(key):
        frames.append(piece)
    return "".join(frames)


def test_replay_follow_and_grace_drop() -> None:
    async def scenario() -> None:
        buffers = MemoryStreamBuffers(grace_seconds=0.05)
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

    asyncio.run(scenario())


def test_a_new_run_replaces_the_old_one_and_ends_its_readers() -> None:
    async def scenario() -> None:
        buffers = MemoryStreamBuffers(grace_seconds=10)
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

    asyncio.run(scenario())
