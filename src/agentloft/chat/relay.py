"""A run's reply text for a caller in the same process that passes on only the text (the A2A server, the
OpenAI-compatible API): it takes the engine's chunks as the run makes them (``TurnRequest.on_chunk``),
instead of reading their encoded frames back from the stream buffer.

The text waits here until the reader asks for it, and comes out joined: each item is everything that
arrived since the last, as a buffer's subscription hands out every frame written since its last read,
so a reader that paces itself (the A2A server sends at most one artifact chunk every 50 ms) sends fewer,
larger pieces and never falls behind.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from pydantic_ai.ui.vercel_ai.response_types import BaseChunk, TextDeltaChunk


class TextRelay:
    """The reply's text deltas, from the engine (call it with each chunk) to one reader (``texts``).
    ``end`` when the run is over: the reader then gets what is left and stops."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._ready = asyncio.Event()
        self._ended = False

    def __call__(self, chunk: BaseChunk) -> None:
        if isinstance(chunk, TextDeltaChunk) and chunk.delta:
            self._parts.append(chunk.delta)
            self._ready.set()

    def end(self) -> None:
        self._ended = True
        self._ready.set()

    async def texts(self) -> AsyncIterator[str]:
        """The text as it arrives, each item all that arrived since the one before; ends after ``end``."""
        while True:
            await self._ready.wait()
            self._ready.clear()
            if self._parts:
                text = "".join(self._parts)
                self._parts.clear()
                yield text
            if self._ended and not self._parts:
                return
