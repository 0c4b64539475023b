"""Checkpoints of a reply while it streams: its text and parts so far, saved on the assistant message.

Why: a reply is otherwise saved only when its run ends, and a worker that dies (a crash, ``kill -9``, a
lost machine) would take all of it along. With checkpoints it loses at most the last ``SECONDS`` or
``CHUNKS`` chunks of it; the worker that notices the death marks the message interrupted and keeps the
rest (``chat.lifecycle``).

Cost: one small UPDATE per running reply per second at most, written in the background (a slow database
never holds the stream back) and one at a time per reply (a checkpoint still being written is not
queued behind; the next one simply comes later).
"""

from __future__ import annotations

import asyncio
import logging
import time

from agentloft.chat import service
from agentloft.chat.parts import PartsCollector
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

SECONDS = 1.0
CHUNKS = 256


class Checkpoints:
    """Feed ``tick`` after each chunk of one run; ``settle`` before the run saves its final state."""

    def __init__(self, rt: Runtime, message_id: str, collector: PartsCollector) -> None:
        self.rt = rt
        self.message_id = message_id
        self.collector = collector
        self._unsaved = 0
        self._last = time.monotonic()
        self._writing: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def tick(self) -> None:
        """One more chunk: checkpoint now if the last one is old enough, else make sure one comes soon."""
        self._unsaved += 1
        due = self._last + SECONDS - time.monotonic()
        if (self._unsaved >= CHUNKS or due <= 0) and self._idle():
            self._save()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(max(due, 0.05), self._on_timer)

    def _idle(self) -> bool:
        return self._writing is None or self._writing.done()

    def _on_timer(self) -> None:
        self._timer = None
        if not self._unsaved:
            return
        if self._idle():
            self._save()
        else:
            self._timer = asyncio.get_running_loop().call_later(SECONDS / 4, self._on_timer)

    def _save(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._unsaved = 0
        self._last = time.monotonic()
        parts = [dict(p) for p in self.collector.parts]
        self._writing = asyncio.create_task(self._write(self.collector.text, parts))

    async def _write(self, content: str, parts: list[dict[str, object]]) -> None:
        try:
            async with self.rt.db.session() as db:
                await service.checkpoint_reply(db=db, message_id=self.message_id, content=content, parts=parts)
        except Exception as exc:  # the final save still comes; a missed checkpoint only risks more loss
            log.warning("checkpoint of reply %s failed: %s", self.message_id, exc)

    async def settle(self) -> None:
        """No more checkpoints; wait for one being written (so it never lands after the final save)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._writing is not None:
            await asyncio.shield(self._writing)
