"""SQLite connections for a busy event loop: no thread hop where it buys nothing, one writer at a time.

aiosqlite runs every call on a connection's own thread and wakes the event loop for the result. On a
small shared machine such a hand-off costs 0.2-0.5 ms, and SQLAlchemy makes four per statement (open a
cursor, execute, fetch, close) plus one per commit: a point read cost ~2 ms, of which SQLite's own work
is a few microseconds. Worse, concurrent write transactions met on SQLite's write lock, whose busy
handler sleeps in growing steps (up to 100 ms) before retrying: fifty chats starting at once spent most
of a second asleep, and every statement of a transaction that held the lock waited for an event-loop
turn while the others slept.

``LoopConnection`` changes two things and keeps aiosqlite for the rest:

- **Writers take turns on an ``asyncio.Lock``** (one per database file and event loop) from their first
  write statement to the end of their transaction. The next writer wakes the moment the previous one
  ends. Waiting longer than the busy timeout raises SQLite's own "database is locked".
- **Calls that cannot wait on another writer of this process run in place**, on the event loop:
  opening and closing cursors (no I/O); every statement of a transaction that holds the write lock, its
  commit and its rollback (no other writer here can hold SQLite's lock, a read never waits for it in WAL
  mode, and with ``synchronous=NORMAL`` a commit appends to the WAL without syncing); and inside
  ``inline_reads()``, SELECTs and their fetches — meant for small indexed reads on hot paths (who is
  calling, what a chat turn needs), not for searches. A write transaction then holds the lock for
  microseconds and never across an event-loop turn, so writers do not queue behind a busy loop.

What could make a commit slow is SQLite's automatic checkpoint (copying the WAL into the database file
and syncing it), so the app's connections turn it off (``PRAGMA wal_autocheckpoint=0`` in ``db``) and a
passive checkpoint runs on a worker thread after every ``CHECKPOINT_EVERY`` commits instead; it never
blocks readers or writers. A passive checkpoint cannot restart the WAL while some reader uses it, which
under a steady load is nearly always, so the file grew without end (139 MB in a long run). So once the
WAL is past ``WAL_TRUNCATE_BYTES`` after a commit, a truncating checkpoint empties it, with this
process's writers held back on their lock meanwhile; ``PRAGMA journal_size_limit`` cuts a WAL back
whenever it restarts.

The size is looked at after every commit (one ``stat``, about a microsecond), not only at the periodic
checkpoint: writes of large documents add about 1 MB each to the WAL (the row, its search index, its
version), so 200 commits grew it by 200 MB before anything looked (390 MB in 30 s of such writes,
``bench/wal_growth.py``). And a truncation must wait for the readers that still read from the WAL: one
reading for longer than the wait (a slow search, an export) made every attempt give up, and the WAL
grew without end (465 MB in 30 s with a reader streaming one-second transactions). So the
further the WAL is past the limit, the longer a truncation waits for readers (``truncate_wait``: twice
as long at twice the limit, up to ``TRUNCATE_WAIT_MAX_S``), and one that gave up is tried again once
the WAL has doubled since. Short readers let the first attempt empty it at the limit; readers that
last seconds hold it to a few times the limit, the writers held back once per doubling for about as
long as those readers last (with a reader streaming one-second transactions back to back: at most
69 MB, and 0.68x the writes; docs/benchmarks.md). A reader that outlasts the longest wait still keeps
the WAL growing: nothing but its end can free it.

Another *process* (the CLI) can still hold SQLite's lock; a write run in place then waits for it on the
loop, up to the busy timeout. One connection is used by one session at a time and every call is awaited
before the next, so the loop and the thread never touch a connection at once.

``_execute`` and ``stop`` are aiosqlite's private members, as are the ``_running``, ``_connection`` and
``_thread`` read here: aiosqlite is pinned exactly and ``tests/core/test_aiosqlite_contract.py`` fails
when an upgrade changes what this relies on. (One writer task fed by a queue, as Datasette does, would
use only the public API but keeps the thread hop for every read and write that this module removes.)
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import os
import sqlite3
import weakref
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import aiosqlite

BUSY_TIMEOUT_S = 10.0  # as ``PRAGMA busy_timeout`` in ``db``
CHECKPOINT_EVERY = 200  # commits between two passive WAL checkpoints
WAL_TRUNCATE_BYTES = 32 * 2**20  # a WAL larger than this after a commit is emptied (TRUNCATE)
# How long a truncation at the limit waits for readers (the writers are held as long). It costs only when
# readers outlast it: otherwise the truncation ends as soon as they do.
TRUNCATE_WAIT_S = 1.0
TRUNCATE_WAIT_MAX_S = 3.0  # the longest wait (twice it, once for copying and once for emptying, stays
# below BUSY_TIMEOUT_S, how long the writers held meanwhile may wait)
JOURNAL_SIZE_LIMIT = 32 * 2**20  # ``PRAGMA journal_size_limit``: what a restarted WAL is cut back to

log = logging.getLogger(__name__)

_INLINE_READS: contextvars.ContextVar[bool] = contextvars.ContextVar("agentloft_inline_reads", default=False)
_FETCHES = frozenset({"fetchone", "fetchmany", "fetchall"})
_STATEMENTS = frozenset({"execute", "executemany"})


@contextmanager
def inline_reads() -> Iterator[None]:
    """Within this block, SELECTs on SQLite run on the event loop (see the module docstring)."""
    token = _INLINE_READS.set(True)
    try:
        yield
    finally:
        _INLINE_READS.reset(token)


class DatabaseFile:
    """What the connections to one database file share: the writers' lock (one per event loop) and the
    commit count that schedules WAL checkpoints."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary())
        self._commits = 0
        self._checkpointing = False
        self._retry_bytes = 0  # after a truncation gave up: the WAL size at which the next one is tried

    def write_lock(self) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        lock = self._locks.get(loop)
        if lock is None:
            lock = self._locks[loop] = asyncio.Lock()
        return lock

    def committed(self) -> None:
        """Count a commit. Start a truncating checkpoint when the WAL has grown past
        ``WAL_TRUNCATE_BYTES`` (and, after one that gave up, to twice the size it gave up at), else a
        passive one every ``CHECKPOINT_EVERY`` commits; both on a worker thread."""
        self._commits += 1
        if self._checkpointing:
            return
        loop = asyncio.get_running_loop()
        size = wal_size(self.path)
        if size > max(WAL_TRUNCATE_BYTES, self._retry_bytes):
            self._commits, self._checkpointing = 0, True
            loop.create_task(self._truncate(size)).add_done_callback(self._checkpointed)
        elif self._commits >= CHECKPOINT_EVERY:
            self._commits, self._checkpointing = 0, True
            loop.run_in_executor(None, checkpoint, self.path, "PASSIVE").add_done_callback(self._checkpointed)

    async def _truncate(self, size: int) -> None:
        """A truncating checkpoint of a WAL of ``size`` bytes while this process's writers wait their turn
        on the lock (on the lock, not in SQLite's busy handler, which would hold up the event loop). It
        waits for the readers that still read from the WAL for at most ``truncate_wait(size)``; when they
        outlast that, it gives up and the next attempt comes once the WAL has doubled."""
        wait = truncate_wait(size)
        async with self.write_lock():
            done = await asyncio.get_running_loop().run_in_executor(None, checkpoint, self.path, "TRUNCATE", wait)
        self._retry_bytes = 0 if done else 2 * size
        if not done:
            log.warning("the WAL of %s (%d MB) could not be emptied: readers held it for over %.1f s; "
                        "trying again at %d MB", self.path, size // 2**20, wait, self._retry_bytes // 2**20)

    def _checkpointed(self, future: asyncio.Future[Any]) -> None:
        self._checkpointing = False
        if not future.cancelled() and future.exception() is not None:
            log.warning("WAL checkpoint of %s failed: %s", self.path, future.exception())


def truncate_wait(size: int) -> float:
    """How long a truncation of a WAL of ``size`` bytes waits for readers: ``TRUNCATE_WAIT_S`` at the limit,
    as much more as the WAL is past it, at most ``TRUNCATE_WAIT_MAX_S``."""
    return min(TRUNCATE_WAIT_S * size / WAL_TRUNCATE_BYTES, TRUNCATE_WAIT_MAX_S)


def wal_size(path: str) -> int:
    try:
        return os.path.getsize(path + "-wal")
    except OSError:
        return 0


def checkpoint(path: str, mode: str = "PASSIVE", wait_s: float = BUSY_TIMEOUT_S) -> bool:
    """Copy what the WAL holds into the database file; whether all of it was (and, for TRUNCATE, the file
    emptied). PASSIVE waits for nobody and blocks nobody, but cannot restart the WAL while readers use
    it, so under a steady load the file only grows. TRUNCATE waits (up to ``wait_s``) for the readers
    that began before it had copied everything, blocks writers meanwhile, and empties the file."""
    conn = sqlite3.connect(path, timeout=wait_s)
    try:
        busy, _frames, _copied = conn.execute(f"PRAGMA wal_checkpoint({mode})").fetchone()
    finally:
        conn.close()
    return busy == 0


class LoopConnection(aiosqlite.Connection):
    """An aiosqlite connection that runs no-wait calls in place and whose writers take turns."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], database: DatabaseFile) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._database = database
        self._write_lock: asyncio.Lock | None = None  # held from the first write to the transaction's end

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._write_lock is None and _starts_write(fn, args):
            await self._take_write_lock()
        try:
            if self._running and self._connection is not None and self._in_place(fn, args):
                result = fn(*args, **kwargs)
                if self._write_lock is not None and getattr(fn, "__name__", "") == "commit":
                    self._database.committed()
                return result
            return await super()._execute(fn, *args, **kwargs)
        finally:
            if self._write_lock is not None and not self._in_transaction():
                self._release_write_lock()

    def stop(self) -> asyncio.Future[Any] | None:
        """Closing (or dropping) the connection ends its transaction, so it ends its turn too."""
        self._release_write_lock()
        return super().stop()

    def _in_transaction(self) -> bool:
        try:
            return self._connection is not None and self._connection.in_transaction
        except sqlite3.ProgrammingError:  # closed
            return False

    def _release_write_lock(self) -> None:
        lock, self._write_lock = self._write_lock, None
        if lock is not None and lock.locked():
            lock.release()

    async def _take_write_lock(self) -> None:
        lock = self._database.write_lock()
        try:
            async with asyncio.timeout(BUSY_TIMEOUT_S):  # not wait_for: its extra task would cost a loop turn
                await lock.acquire()
        except TimeoutError:
            raise sqlite3.OperationalError("database is locked") from None
        self._write_lock = lock

    def _in_place(self, fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
        owner = getattr(fn, "__self__", None)
        name = getattr(fn, "__name__", "")
        if isinstance(owner, sqlite3.Cursor):
            if name == "close" or (self._write_lock is not None and (name in _STATEMENTS or name in _FETCHES)):
                return True
            if not _INLINE_READS.get():
                return False
            return name in _FETCHES or (name == "execute" and bool(args) and _is_select(args[0]))
        if isinstance(owner, sqlite3.Connection):
            # commit/rollback: a no-op without a transaction; with one, this connection holds the lock
            return name in ("cursor", "commit", "rollback")
        return False


def _is_select(sql: Any) -> bool:
    return isinstance(sql, str) and sql.lstrip()[:6].upper() == "SELECT"


def _starts_write(fn: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    """A statement that may take SQLite's write lock: anything but a SELECT or a PRAGMA. The PRAGMAs a
    new connection runs (``db._sqlite_pragmas``) only set connection options; were they to wait for the
    write lock, a read that opens a new pool connection inside another session's write transaction
    would wait for that transaction, which waits for it."""
    name = getattr(fn, "__name__", "")
    if name == "executescript":
        return True
    if name not in _STATEMENTS or not args or not isinstance(args[0], str):
        return False
    head = args[0].lstrip()[:6].upper()
    return head != "SELECT" and head != "PRAGMA"


_FILES: dict[str, DatabaseFile] = {}


def loop_connection_factory(path: str) -> Callable[[], Awaitable[LoopConnection]]:
    """The ``async_creator`` for ``create_async_engine``: a started ``LoopConnection`` to ``path``.
    Every engine on the same file in this process shares its ``DatabaseFile``, so their writers take
    turns too."""
    database = _FILES.setdefault(os.path.realpath(path), DatabaseFile(path))

    async def connect() -> LoopConnection:
        conn = LoopConnection(partial(sqlite3.connect, path, check_same_thread=False), database)
        conn._thread.daemon = True  # as SQLAlchemy does for its own aiosqlite connections
        await conn  # starts its thread and opens the file (aiosqlite types the result as its base class)
        return conn

    return connect
