"""What ``core.db_sqlite.LoopConnection`` relies on in aiosqlite's private side, checked directly.

``LoopConnection`` overrides ``aiosqlite.Connection._execute`` (the one funnel every call goes through)
and ``stop`` (how a connection ends, also when SQLAlchemy terminates it), and reads ``_running``,
``_connection`` and ``_thread``. None of that is aiosqlite's public API, so pyproject.toml pins the exact
version and these tests fail when an upgrade changes any of it: update ``db_sqlite`` and the pin together.
"""

from __future__ import annotations

import inspect
import re
import sqlite3
import threading
import tomllib
from collections.abc import Callable
from functools import partial
from importlib.metadata import version
from pathlib import Path
from typing import Any

import aiosqlite

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def test_the_installed_aiosqlite_is_the_pinned_one() -> None:
    deps = tomllib.loads(PYPROJECT.read_text())["project"]["dependencies"]
    pins = [d for d in deps if re.match(r"aiosqlite\b", d)]
    assert pins == [f"aiosqlite=={version('aiosqlite')}"]


def test_the_overridden_members_keep_their_shape() -> None:
    execute = aiosqlite.Connection._execute
    assert inspect.iscoroutinefunction(execute)
    assert list(inspect.signature(execute).parameters) == ["self", "fn", "args", "kwargs"]
    assert list(inspect.signature(aiosqlite.Connection.stop).parameters) == ["self"]
    init = inspect.signature(aiosqlite.Connection.__init__).parameters
    assert list(init)[:3] == ["self", "connector", "iter_chunk_size"]


class _Recording(aiosqlite.Connection):
    """Records what reaches ``_execute`` (the owner's type and the method's name) and calls to ``stop``."""

    def __init__(self, connector: Callable[[], sqlite3.Connection]) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self.calls: list[tuple[str, str, tuple[Any, ...]]] = []
        self.stops = 0

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        owner = type(getattr(fn, "__self__", None)).__name__
        self.calls.append((owner, getattr(fn, "__name__", ""), args))
        return await super()._execute(fn, *args, **kwargs)

    def stop(self) -> Any:
        self.stops += 1
        return super().stop()


async def test_every_call_sqlalchemy_makes_goes_through_execute_as_a_bound_sqlite3_method(
    tmp_path: Path,
) -> None:
    conn = _Recording(partial(sqlite3.connect, str(tmp_path / "c.db"), check_same_thread=False))
    assert isinstance(conn._thread, threading.Thread) and not conn._thread.is_alive()
    await conn
    assert conn._running is True and isinstance(conn._connection, sqlite3.Connection)
    cursor = await conn.cursor()
    await cursor.execute("CREATE TABLE t (x INTEGER)")
    await cursor.executemany("INSERT INTO t VALUES (?)", [(1,), (2,)])
    await cursor.execute("SELECT x FROM t")
    await cursor.fetchone()
    await cursor.fetchmany(1)
    await cursor.fetchall()
    await cursor.close()
    await conn.commit()
    await conn.rollback()
    await conn.close()
    assert [(owner, name) for owner, name, _ in conn.calls] == [
        ("Connection", "cursor"),
        ("Cursor", "execute"), ("Cursor", "executemany"), ("Cursor", "execute"),
        ("Cursor", "fetchone"), ("Cursor", "fetchmany"), ("Cursor", "fetchall"), ("Cursor", "close"),
        ("Connection", "commit"), ("Connection", "rollback"), ("Connection", "close"),
    ]
    assert conn.calls[1][2] == ("CREATE TABLE t (x INTEGER)", [])  # the SQL comes first
    assert conn.stops == 1  # close() ends through stop()
    assert conn._connection is None


async def test_sqlalchemy_terminates_a_connection_through_stop() -> None:
    from sqlalchemy.dialects.sqlite.aiosqlite import AsyncAdapt_aiosqlite_dbapi

    assert AsyncAdapt_aiosqlite_dbapi(aiosqlite, sqlite3).has_stop
