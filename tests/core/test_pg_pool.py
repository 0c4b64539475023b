"""PostgreSQL's connection pool: a connection used moments ago is handed out without a ping (the asyncpg
dialect's ping is three round trips), and one that sat idle is pinged first, so a connection the server
dropped meanwhile is replaced instead of failing the request (``core.db.IDLE_PING_AFTER_S``)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import text

from agentloft.core import db as core_db
from agentloft.core.db import Database
from tests.pg import database as pg


@pytest.fixture
def db_url() -> Iterator[str]:
    with pg.scratch_database("pool") as url:
        yield url


def _count_pings(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[int]:
    pings: list[int] = []
    real = db.engine.dialect.do_ping

    def counted(dbapi_conn: Any) -> bool:
        pings.append(1)
        return real(dbapi_conn)

    monkeypatch.setattr(db.engine.dialect, "do_ping", counted)
    return pings


async def _backend_pid(db: Database) -> int:
    async with db.session() as s:
        return int((await s.execute(text("SELECT pg_backend_pid()"))).scalar_one())


def _gone(url: str, pid: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while pg.query(url, "SELECT 1 FROM pg_stat_activity WHERE pid = ?", (pid,)):
        assert time.monotonic() < deadline, f"backend {pid} still running"
        time.sleep(0.02)


async def test_a_connection_used_moments_ago_is_not_pinged(db_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    db = Database(db_url)
    try:
        pings = _count_pings(db, monkeypatch)
        first = await _backend_pid(db)
        for _ in range(5):
            assert await _backend_pid(db) == first  # the same pooled connection each time
        assert pings == []
    finally:
        await db.dispose()


async def test_an_idle_connection_the_server_dropped_is_replaced(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(core_db, "IDLE_PING_AFTER_S", 0.0)  # every pooled connection counts as idle
    db = Database(db_url)
    try:
        pings = _count_pings(db, monkeypatch)
        dropped = await _backend_pid(db)
        assert pg.query(db_url, "SELECT pg_terminate_backend(?)", (dropped,)) == [(True,)]
        _gone(db_url, dropped)
        assert await _backend_pid(db) != dropped  # answered on a new connection, no error
        assert pings
    finally:
        await db.dispose()
