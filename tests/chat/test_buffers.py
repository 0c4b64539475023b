"""The in-process stream buffers: replay then follow, several readers, a new run per key, grace drop."""

from __future__ import annotations

import asyncio

from agentloft.chat.buffers import MemoryStreamBuffers


async def _collect(buffers: MemoryStreamBuffers, key: str) -> str:
    return "".join([frames async for frames in buffers.subscribe(key)])


def test_replay_follow_and_grace_drop() -> None:
    async def scenario() -> None:
        buffers = MemoryStreamBuffers(grace_seconds=0.05)
        assert await _collect(buffers, "none") == ""
        await buffers.open("k", {"sessionId": "k"})
        await buffers.append("k", "a")
        early = asyncio.create_task(_collect(buffers, "k"))
        await asyncio.sleep(0)
        await buffers.append("k", "b")
        late = asyncio.create_task(_collect(buffers, "k"))
        await buffers.append("k", "c")
        assert await buffers.is_active("k")
        await buffers.close("k")
        assert await early == "abc" and await late == "abc"
        assert not await buffers.is_active("k")
        assert await _collect(buffers, "k") == "abc"  # still replayable during the grace period
        await buffers.append("k", "ignored after close")
        await asyncio.sleep(0.1)
        assert await buffers.meta("k") is None and await _collect(buffers, "k") == ""

    asyncio.run(scenario())


def test_a_new_run_replaces_the_old_one_and_ends_its_readers() -> None:
    async def scenario() -> None:
        buffers = MemoryStreamBuffers(grace_seconds=10)
        await buffers.open("k")
        await buffers.append("k", "old")
        reader = asyncio.create_task(_collect(buffers, "k"))
        await asyncio.sleep(0)
        await buffers.open("k", {"run": 2})
        await buffers.append("k", "new")
        assert await asyncio.wait_for(reader, 1) == "old"
        assert await buffers.meta("k") == {"run": 2}
        await buffers.close("k")
        assert await _collect(buffers, "k") == "new"

    asyncio.run(scenario())
