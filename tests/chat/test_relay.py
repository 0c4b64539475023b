"""``chat.relay.TextRelay``: the reply's text from the engine's chunks to one reader, joined since the
reader's last look, and ended when the run is."""

from __future__ import annotations

import asyncio

from pydantic_ai.ui.vercel_ai.response_types import ErrorChunk, TextDeltaChunk, TextStartChunk

from agentloft.chat.relay import TextRelay


async def _read(relay: TextRelay, got: list[str], first: asyncio.Event) -> None:
    async for text in relay.texts():
        got.append(text)
        first.set()
        await asyncio.sleep(0.01)  # a reader that paces itself, as the A2A server does


def test_text_waits_for_the_reader_and_comes_out_joined() -> None:
    async def run() -> list[str]:
        relay, got, first = TextRelay(), [], asyncio.Event()
        reader = asyncio.create_task(_read(relay, got, first))
        relay(TextStartChunk(id="t"))
        relay(TextDeltaChunk(id="t", delta="Hel"))
        await first.wait()  # the reader took "Hel"; what follows arrives while it paces
        for piece in ["lo", "", ", wor", "ld"]:
            relay(TextDeltaChunk(id="t", delta=piece))
        relay(ErrorChunk(error_text="not text"))
        relay.end()
        await asyncio.wait_for(reader, 5)
        return got

    assert asyncio.run(run()) == ["Hel", "lo, world"]


def test_a_run_without_text_ends_its_reader() -> None:
    async def run() -> list[str]:
        relay = TextRelay()
        relay.end()
        return [t async for t in relay.texts()]

    assert asyncio.run(run()) == []
