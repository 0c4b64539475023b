"""Checkpoints of replies while they stream: their text and parts so far, saved on the assistant messages.

Why: a reply is otherwise saved only when its run ends, and a worker that dies (a crash, ``kill -9``, a
lost machine) would take all of it along. With checkpoints it loses at most about the last ``SECONDS``
of it; the worker that notices the death marks the message interrupted and keeps the rest
(``chat.lifecycle``).

How: one writer per process. A run marks its reply as changed after each chunk (a dict assignment); once
per ``SECONDS`` the writer saves every changed reply of the process in one transaction (one UPDATE
executed for all of them). A checkpoint per reply per second would be one transaction per reply per
second: at 400 replies streaming at once that took the connection pool from the turns themselves
(``bench/scale_out.py``, docs/benchmarks.md). The writer works in the background, so a slow database
never holds a stream back, and it stops when no reply is streaming.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agentloft.chat import service
from agentloft.chat.parts import PartsCollector
from agentloft.core.db import Database

log = logging.getLogger(__name__)

SECONDS = 1.0


class CheckpointWriter:
    """``touch`` after each chunk of a reply; ``settle`` before the run saves the reply's final state."""

    def __init__(self, db: Database, period_s: float = SECONDS) -> None:
        self.db = db
        self.period_s = period_s
        self._changed: dict[str, PartsCollector] = {}  # message id -> what its run has shown so far
        self._loop: asyncio.Task[None] | None = None
        self._writing: set[str] = set()
        self._written = asyncio.Event()

    def touch(self, message_id: str, collector: PartsCollector) -> None:
        self._changed[message_id] = collector
        if self._loop is None or self._loop.done():
            self._loop = asyncio.create_task(self._run())

    async def settle(self, message_id: str) -> None:
        """No more checkpoints of this reply; wait for one being written (so it never lands after the
        final save, which the UPDATE's ``status = 'streaming'`` condition would also refuse)."""
        self._changed.pop(message_id, None)
        while message_id in self._writing:
            await asyncio.shield(self._written.wait())

    async def aclose(self) -> None:
        """At shutdown, after every run has saved: end the background loop (nothing is left to write)."""
        self._changed.clear()
        if self._loop is not None:
            self._loop.cancel()
            await asyncio.gather(self._loop, return_exceptions=True)
            self._loop = None

    async def _run(self) -> None:
        while self._changed:
            await asyncio.sleep(self.period_s)
            await self._write()

    async def _write(self) -> None:
        batch, self._changed = self._changed, {}
        rows: list[dict[str, Any]] = [
            {"message_id": message_id, "content": collector.text, "parts": [dict(p) for p in collector.parts]}
            for message_id, collector in batch.items()
        ]
        if not rows:
            return
        self._writing, self._written = set(batch), asyncio.Event()
        try:
            async with self.db.session() as db:
                await service.checkpoint_replies(db=db, rows=rows)
        except Exception as exc:  # the final saves still come; a missed checkpoint only risks more loss
            log.warning("checkpoint of %d streaming replies failed: %s", len(rows), exc)
        finally:
            self._writing = set()
            self._written.set()
