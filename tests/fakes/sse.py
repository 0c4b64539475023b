"""How a fake server cuts a Server-Sent Events body into writes, so tests can check that a reader's output
does not depend on where the network cut the bytes.

``Writes`` is ``"event"`` (one event per write, each followed by a turn of the event loop, as a model
streaming token by token), ``"whole"`` (the whole body in one write, as a reader far behind sees it), or a
number of bytes per write (``7``: events, lines, CRLF pairs and UTF-8 characters all split across writes).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable
from typing import Literal

Writes = Literal["event", "whole"] | int
DELIVERIES: tuple[Writes, ...] = ("event", "whole", 7)

_BLANK_LINE = re.compile(rb"(?:\r\n|\r(?!\n)|\n)(?:\r\n|\r(?!\n)|\n)")


def split_events(body: bytes) -> list[bytes]:
    """The body cut after each blank line (whatever its line ends), every byte kept."""
    pieces, start = [], 0
    for match in _BLANK_LINE.finditer(body):
        pieces.append(body[start:match.end()])
        start = match.end()
    if start < len(body):
        pieces.append(body[start:])
    return pieces


def cut(events: Iterable[bytes], writes: Writes) -> list[bytes]:
    """The writes that deliver ``events`` (already encoded, in order) the way ``writes`` says."""
    events = list(events)
    if writes == "event":
        return events
    body = b"".join(events)
    if writes == "whole":
        return [body]
    return [body[i:i + writes] for i in range(0, len(body), writes)]


async def deliver(writes: list[bytes], *, delay: float = 0.0) -> AsyncIterator[bytes]:
    """Yield each write, sleeping ``delay`` before each after the first (else just yielding to the loop,
    so consecutive writes leave the server as separate pieces)."""
    for i, piece in enumerate(writes):
        if i:
            await asyncio.sleep(delay)
        yield piece
