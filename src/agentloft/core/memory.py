"""Giving memory back to the system once a burst of work is over.

After 200 chats at once the process stayed ~60 MB above its idle size for good, although almost nothing
of the burst was still alive. Two things kept the pages:
- garbage in reference cycles (a pydantic-ai run is full of them) waits for a full collection, and an
  idle server allocates too little to ever trigger one;
- the allocators keep what was freed: pymalloc returns an arena (1 MiB) only when all of it is free, and
  glibc's malloc keeps freed heap pages until ``malloc_trim``.

``MemoryReleaser`` watches for the end of activity: every ``check_s`` seconds it looks whether the
process allocated since its last look (collections of the youngest generation, or the number of
allocated blocks moved); after a quiet interval that followed activity it runs a full collection and
``malloc_trim(0)`` once. A quiet server is not disturbed again, a busy one never (a full collection
costs milliseconds, so it waits for a pause). ``malloc_trim`` is glibc's; elsewhere only the collection
runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import ctypes.util
import gc
import logging
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)

CHECK_S = 10.0
# What counts as activity between two looks: this many collections of the youngest generation (each
# follows ~700 new container objects; a chat turn makes dozens, a timer's tick none or one), or this
# many allocated blocks taken or freed.
COLLECTIONS = 3
BLOCKS_MOVED = 2000


def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where there is none (musl, macOS)."""
    name = ctypes.util.find_library("c")
    if not name:
        return None
    try:
        trim = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release() -> None:
    """Collect every generation, then hand glibc's free heap pages back to the system."""
    gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class MemoryReleaser:
    """Runs ``release`` once after each period of activity (see the module's doc)."""

    def __init__(self, check_s: float = CHECK_S) -> None:
        self.check_s = check_s
        self.releases = 0
        self._task: asyncio.Task[None] | None = None
        self._last = self._sample()
        self._pending = False

    @staticmethod
    def _sample() -> tuple[int, int]:
        return gc.get_stats()[0]["collections"], sys.getallocatedblocks()

    def look(self) -> bool:
        """One look; True when it released. Activity since the last look makes a release pending; a
        look that finds none releases what is pending."""
        now = self._sample()
        active = now[0] - self._last[0] >= COLLECTIONS or abs(now[1] - self._last[1]) > BLOCKS_MOVED
        self._last = now
        if active:
            self._pending = True
            return False
        if not self._pending:
            return False
        self._pending = False
        release()
        self._last = self._sample()  # what the release itself freed is not activity
        self.releases += 1
        return True

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.check_s)
            try:
                self.look()
            except Exception:  # never let the watcher die; the process merely keeps its pages
                log.exception("releasing memory failed")

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
