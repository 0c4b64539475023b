"""SQLite connections (``agentloft.core.db_sqlite``): what runs on the event loop, how writers take turns, and
the WAL checkpoints that replace SQLite's automatic ones. Each test uses its own database file."""

from __future__ import annotations

import asyncio
import shutil
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import text

from agentloft.core import db_sqlite
from agentloft.core.db import Database
from tests.support import file_database


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Database]:
    db = await file_database(tmp_path / "test.db",
                             "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, thread INTEGER)",
                             "INSERT INTO items (name, thread) VALUES ('seed', 0)")
    yield db
    await db.dispose()


def _register_thread_function(db: Database) -> None:
    """``thread_id()`` in SQL answers which thread ran the statement."""
    from sqlalchemy import event

    def on_connect(dbapi_conn: object, _record: object) -> None:
        dbapi_conn.create_function("thread_id", 0, threading.get_ident)  # type: ignore[attr-defined]

    event.listen(db.engine.sync_engine, "connect", on_connect)


async def test_reads_run_on_the_loop_only_inside_read_session(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'reads.db'}")
    _register_thread_function(db)
    try:
        loop_thread = threading.get_ident()
        async with db.read_session() as s:
            inline = (await s.execute(text("SELECT thread_id()"))).scalar_one()
        async with db.session() as s:
            threaded = (await s.execute(text("SELECT thread_id()"))).scalar_one()
        assert inline == loop_thread
        assert threaded != loop_thread
    finally:
        await db.dispose()


async def test_a_write_transaction_runs_on_the_loop_and_commits(tmp_path: Path) -> None:
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'writes.db'}")
    _register_thread_function(db)
    try:
        async with db.session() as s:
            await s.execute(text("CREATE TABLE t (thread INTEGER)"))
            await s.execute(text("INSERT INTO t VALUES (thread_id())"))
        async with db.session() as s:
            assert (await s.execute(text("SELECT thread FROM t"))).scalar_one() == threading.get_ident()
    finally:
        await db.dispose()


async def test_writers_take_turns(database: Database) -> None:
    """A second writer waits for the first one's transaction to end instead of meeting SQLite's lock
    (where it would wait on its connection's thread): it writes, in place, after the first commits."""
    _register_thread_function(database)
    order: list[str] = []
    first_wrote = asyncio.Event()

    async def first() -> None:
        async with database.session() as s:
            await s.execute(text("INSERT INTO items (name) VALUES ('first')"))
            order.append("first wrote")
            first_wrote.set()
            await asyncio.sleep(0.2)  # holds its transaction across event-loop turns
            order.append("first commits")

    async def second() -> None:
        await first_wrote.wait()
        async with database.session() as s:
            await s.execute(text("INSERT INTO items (name, thread) VALUES ('second', thread_id())"))
            order.append("second wrote")

    await asyncio.gather(first(), second())
    assert order == ["first wrote", "first commits", "second wrote"]
    async with database.session() as s:
        names = (await s.execute(text("SELECT name FROM items ORDER BY id"))).scalars().all()
    assert names == ["seed", "first", "second"]
    async with database.session() as s:
        second_thread = (await s.execute(text("SELECT thread FROM items WHERE name = 'second'"))).scalar_one()
    assert second_thread == threading.get_ident()


async def test_a_failed_write_releases_the_turn(database: Database) -> None:
    with pytest.raises(Exception, match=r"UNIQUE|constraint"):
        async with database.session() as s:
            await s.execute(text("INSERT INTO items (id, name) VALUES (1, 'duplicate')"))
    async with asyncio.timeout(2):
        async with database.session() as s:
            await s.execute(text("INSERT INTO items (name) VALUES ('after')"))


async def test_a_dropped_connection_ends_its_turn(database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(db_sqlite, "BUSY_TIMEOUT_S", 1.0)
    async with database.engine.connect() as conn:
        await conn.execute(text("INSERT INTO items (name) VALUES ('never committed')"))
        await conn.invalidate()  # the pool drops the DBAPI connection mid-transaction
    async with database.session() as s:
        await s.execute(text("INSERT INTO items (name) VALUES ('next')"))
        names = (await s.execute(text("SELECT name FROM items ORDER BY id"))).scalars().all()
    assert names == ["seed", "next"]


async def test_a_writer_waiting_too_long_gets_database_is_locked(
    database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db_sqlite, "BUSY_TIMEOUT_S", 0.2)
    holding = asyncio.Event()
    release = asyncio.Event()

    async def holder() -> None:
        async with database.session() as s:
            await s.execute(text("INSERT INTO items (name) VALUES ('holder')"))
            holding.set()
            await release.wait()

    task = asyncio.create_task(holder())
    await holding.wait()
    # well before SQLite's own 10 s busy timeout: the wait is the writers' turn, bounded by BUSY_TIMEOUT_S
    with pytest.raises(Exception, match="database is locked"):
        async with asyncio.timeout(5), database.session() as s:
            await s.execute(text("INSERT INTO items (name) VALUES ('waiter')"))
    release.set()
    await task


async def test_commits_are_checkpointed_on_a_worker_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SQLite's own checkpoints are off; ours copy the WAL into the database file every N commits."""
    monkeypatch.setattr(db_sqlite, "CHECKPOINT_EVERY", 5)
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'wal.db'}")

    def rows_in_main_file() -> int:
        copy = tmp_path / "main-only.db"
        shutil.copyfile(tmp_path / "wal.db", copy)  # the main file alone, without its WAL
        with sqlite3.connect(copy) as conn:
            tables = conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'items'").fetchone()[0]
            return conn.execute("SELECT count(*) FROM items").fetchone()[0] if tables else 0

    try:
        async with db.session() as s:
            assert (await s.execute(text("PRAGMA wal_autocheckpoint"))).scalar_one() == 0
            await s.execute(text("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))  # no transaction
        for i in range(4):
            async with db.session() as s:
                await s.execute(text(f"INSERT INTO items (name) VALUES ('n{i}')"))
        assert rows_in_main_file() == 0  # four commits: still only in the WAL
        async with db.session() as s:
            await s.execute(text("INSERT INTO items (name) VALUES ('n4')"))
        for _ in range(100):  # the fifth started a checkpoint on a worker thread
            if rows_in_main_file() == 5:
                break
            await asyncio.sleep(0.02)
        assert rows_in_main_file() == 5
    finally:
        await db.dispose()


@contextmanager
def _reading(path: Path, hold_s: float) -> Iterator[None]:
    """While the block runs, another connection reads in read transactions of ``hold_s``, back to back."""
    stop = threading.Event()

    def reader() -> None:
        conn = sqlite3.connect(path, isolation_level=None)
        try:
            while not stop.is_set():
                conn.execute("BEGIN")
                conn.execute("SELECT count(*) FROM t").fetchall()
                stop.wait(hold_s)
                conn.execute("COMMIT")
        finally:
            conn.close()

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


async def _write_blobs(db: Database, path: Path, count: int, size: int, pause_s: float = 0.0) -> int:
    """Commit ``count`` rows of ``size`` bytes to the table ``t`` (made if missing), one transaction each, ``pause_s``
    apart; the largest the WAL was after one."""
    async with db.session() as s:
        await s.execute(text("CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, body BLOB)"))
        before = (await s.execute(text("SELECT count(*) FROM t"))).scalar_one()
    largest = 0
    for _ in range(count):
        async with db.session() as s:
            await s.execute(text("INSERT INTO t (body) VALUES (:b)"), {"b": b"x" * size})
        largest = max(largest, db_sqlite.wal_size(str(path)))
        await asyncio.sleep(pause_s)  # and let a checkpoint's task take its turn
    async with db.read_session() as s:
        assert (await s.execute(text("SELECT count(*) FROM t"))).scalar_one() == before + count
    return largest


async def test_the_wal_stays_bounded_while_readers_keep_using_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under a steady load some reader is nearly always in the WAL, so passive checkpoints never let it
    restart and the file grew without end; past ``WAL_TRUNCATE_BYTES`` a checkpoint truncates it."""
    monkeypatch.setattr(db_sqlite, "CHECKPOINT_EVERY", 20)
    monkeypatch.setattr(db_sqlite, "WAL_TRUNCATE_BYTES", 2**20, raising=False)
    path = tmp_path / "busy.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    await _write_blobs(db, path, 1, 16)  # the table, before the reader reads it
    try:
        with _reading(path, 0.003):  # read transactions a few milliseconds long
            largest = await _write_blobs(db, path, 1280, 16384)  # 20 MB in all
        # the limit, plus what comes in until the next checkpoint and while it runs: on a loaded machine a
        # checkpoint can take a while (11 MB was seen at a load average of 9); without truncating, the WAL
        # holds nearly all 20 MB at the end
        assert largest < 14 * 2**20
    finally:
        await db.dispose()


async def test_the_wal_is_truncated_as_soon_as_it_passes_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Large transactions (a large document writes about 1 MB to the WAL) grew the WAL by hundreds of MB
    between two periodic checkpoints, the only moments its size was looked at: it is looked at after
    every commit."""
    monkeypatch.setattr(db_sqlite, "WAL_TRUNCATE_BYTES", 2 * 2**20, raising=False)
    path = tmp_path / "large.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        # 120 commits of 128 KB, 15 MB in all: fewer commits than CHECKPOINT_EVERY (200)
        largest = await _write_blobs(db, path, 120, 128 * 1024)
        assert largest < 6 * 2**20  # the limit, and what comes in while a truncation waits its turn
    finally:
        await db.dispose()


async def test_the_wal_stays_bounded_while_a_reader_outlasts_the_truncations_wait(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader whose read transactions last longer than a truncation waits for them (a slow search, an
    export streaming rows) made every truncation give up, and the WAL grew without end. A truncation that
    gave up is tried again once the WAL has doubled, waiting twice as long, until one outlasts the reader."""
    monkeypatch.setattr(db_sqlite, "WAL_TRUNCATE_BYTES", 2**20, raising=False)
    monkeypatch.setattr(db_sqlite, "TRUNCATE_WAIT_S", 0.05)
    path = tmp_path / "streamed.db"
    db = Database(f"sqlite+aiosqlite:///{path}")
    await _write_blobs(db, path, 1, 16)
    try:
        with _reading(path, 0.2):  # four times the first wait
            # 24 MB in all, at most about 3 MB/s (a busy server's pace). The attempts at 1, 2 and 4 MB
            # wait 0.05, 0.1 and 0.2 s: given a reader's 0.2 s to end, and the next one's, the one at
            # 4 MB may give up too, the one at 8 MB (0.4 s) does not.
            largest = await _write_blobs(db, path, 384, 65536, pause_s=0.02)
        # before, every truncation waited 0.05 s and gave up: the WAL held all 24 MB at the end
        assert largest < 14 * 2**20, largest
    finally:
        await db.dispose()


async def test_a_new_connection_inside_a_write_transaction_does_not_wait_for_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new pool connection's PRAGMAs do not take the writers' turn: a read opened inside a write
    transaction (here needing a second connection) must not wait for that transaction to end."""
    monkeypatch.setattr(db_sqlite, "BUSY_TIMEOUT_S", 1.0)
    db = Database(f"sqlite+aiosqlite:///{tmp_path / 'nested.db'}")
    try:
        async with db.session() as s:
            await s.execute(text("CREATE TABLE t (x INTEGER)"))
        async with db.session() as writer:
            await writer.execute(text("INSERT INTO t VALUES (1)"))
            async with db.session() as reader:  # the pool's second connection, opened now
                assert (await reader.execute(text("SELECT count(*) FROM t"))).scalar_one() == 0
        async with db.session() as s:
            assert (await s.execute(text("SELECT count(*) FROM t"))).scalar_one() == 1
    finally:
        await db.dispose()
