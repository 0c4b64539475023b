"""Which worker owns each run: so a stop sent to any worker reaches the right one, and a worker that died
has its runs finished by another (``chat.runs`` uses these).

Ownership is a lease per run, named ``session:<id>`` (a turn of a session) or ``task:<id>`` (an A2A
task), taken before the database says the run exists and given back after it saved:

- ``MemoryLeases``: one process (the embedded default). A lease nobody in this process holds belongs
  to nobody, since no other process serves the instance.
- ``RedisLeases`` (``chat.leases_redis``, ``AGENTLOFT_REDIS_URL``): a key with a TTL per lease, renewed
  by the owner's heartbeat; a hash of every registered run, so a sweeper finds the runs of a worker that
  died; and a pub/sub channel per worker that carries control requests (a stop, with a reply channel) to
  the owner. It lives in a module of its own so that a process without Redis never imports the client
  library (about 6 MB resident).
"""

from __future__ import annotations

import os
import socket
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

# A control request: (op, payload) -> reply. The owner of a run answers it.
Handler = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]


def session_lease(session_id: str) -> str:
    return f"session:{session_id}"


def task_lease(task_id: str) -> str:
    return f"task:{task_id}"


class NoReply(Exception):
    """The owner of a run got a control request but did not answer in time."""


class Leases(ABC):
    """Who owns which run, and a way to ask the owner of one to act on it."""

    worker_id: str
    shared: bool
    """Whether other workers may exist (and so own runs this process does not know of)."""
    ttl_s: float
    unreachable: tuple[type[Exception], ...] = ()
    """The errors that mean the store cannot be reached for now (not a bug): the sweep skips a round on
    them. Empty for leases kept in this process."""

    @abstractmethod
    async def start(self, handler: Handler) -> None:
        """Begin heartbeats and answer control requests with ``handler``."""

    @abstractmethod
    async def aclose(self) -> None:
        """Stop heartbeats; the leases still held run out after their TTL."""

    @abstractmethod
    async def acquire(self, name: str) -> bool:
        """Take ``name`` for this worker; False when a live worker (this one included) holds it."""

    @abstractmethod
    async def release(self, name: str) -> None:
        """Give ``name`` back (only if this worker still holds it). Never raises."""

    @abstractmethod
    async def owner(self, name: str) -> str | None:
        """The worker holding ``name``, None when nobody does."""

    @abstractmethod
    async def missing(self, names: list[str]) -> set[str]:
        """Of ``names``, those no live worker holds."""

    @abstractmethod
    async def orphans(self) -> list[str]:
        """Registered runs whose lease ran out (their worker died). Only other workers leave them."""

    @abstractmethod
    async def settle(self, name: str) -> bool:
        """Claim the right to finish the orphan ``name``: one worker wins (for a minute)."""

    @abstractmethod
    async def forget(self, name: str) -> None:
        """The orphan ``name`` is finished: drop it from the registered runs."""

    @abstractmethod
    async def request(self, worker: str, op: str, payload: dict[str, Any], limit_s: float) -> dict[str, Any] | None:
        """Ask ``worker`` to act; its reply, None when no such worker listens, ``NoReply`` after
        ``limit_s`` seconds."""


class MemoryLeases(Leases):
    """Leases of one process: held is owned, anything else belongs to nobody."""

    shared = False

    def __init__(self, ttl_s: float = 6.0) -> None:
        self.worker_id = f"{socket.gethostname()}-{os.getpid()}"
        self.ttl_s = ttl_s
        self._held: set[str] = set()

    async def acquire(self, name: str) -> bool:
        if name in self._held:
            return False
        self._held.add(name)
        return True

    async def release(self, name: str) -> None:
        self._held.discard(name)

    async def owner(self, name: str) -> str | None:
        return self.worker_id if name in self._held else None

    async def missing(self, names: list[str]) -> set[str]:
        return {n for n in names if n not in self._held}

    async def start(self, handler: Handler) -> None:
        return None  # nothing to renew, nobody else to listen to

    async def aclose(self) -> None:
        self._held.clear()

    async def orphans(self) -> list[str]:
        return []  # a process that died took its memory along; the next start finishes its runs

    async def settle(self, name: str) -> bool:
        return True

    async def forget(self, name: str) -> None:
        return None

    async def request(self, worker: str, op: str, payload: dict[str, Any], limit_s: float) -> dict[str, Any] | None:
        return None  # no other worker
