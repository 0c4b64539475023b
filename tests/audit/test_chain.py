"""The hash chain on a real database (SQLite, or PostgreSQL in its pass): events verify, a changed, removed
or cut-off row is found at its id, retention keeps what is left verifiable, and two appenders at once on
separate connections still make one chain with ids in order."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from sqlalchemy import text, update

from agentloft.audit import service
from agentloft.audit.chain import Actor, Entry, digest
from agentloft.audit.models import AuditEvent
from agentloft.core import migrate
from agentloft.core.db import Database, utcnow


@pytest.fixture
async def database(blank_database_url: str) -> AsyncIterator[Database]:
    migrate.upgrade(blank_database_url)
    db = Database(blank_database_url)
    yield db
    await db.dispose()


async def _append(db: Database, count: int, *, kind: str = "test.event") -> None:
    for i in range(count):
        async with db.session() as s:
            await service.record(db=s, type=kind, actor=Actor(1, "admin", "127.0.0.1"), target=f"t{i}",
                                 detail={"n": i, "text": "naïve 中文"})


async def _verdict(db: Database) -> service.Verdict:
    async with db.session() as s:
        return await service.verify(db=s)


async def _sql(db: Database, statement: str) -> None:
    async with db.session() as s:
        await s.execute(text(statement))


async def test_an_untouched_chain_verifies(database: Database) -> None:
    assert (await _verdict(database)).broken_at is None  # empty
    await _append(database, 5)
    verdict = await _verdict(database)
    assert (verdict.broken_at, verdict.checked) == (None, 5)


@pytest.mark.parametrize(("tamper", "broken_at"), [
    ("UPDATE audit_events SET target = 'x' WHERE id = 3", 3),
    ("UPDATE audit_events SET prev_hash = hash WHERE id = 2", 2),
    ("DELETE FROM audit_events WHERE id = 4", 4),
    ("DELETE FROM audit_events WHERE id = 5", 5),
])
async def test_a_tampered_row_is_found_at_its_id(database: Database, tamper: str, broken_at: int) -> None:
    await _append(database, 5)
    await _sql(database, tamper)
    assert (await _verdict(database)).broken_at == broken_at


async def test_a_row_rewritten_with_its_hash_recomputed_breaks_the_next_link(database: Database) -> None:
    """Whoever edits a row and fixes its own hash still leaves the next row naming the old one."""
    await _append(database, 3)
    async with database.session() as s:
        row = (await s.execute(text("SELECT prev_hash FROM audit_events WHERE id = 2"))).one()
    fields = {"id": 2, "at": "2020-01-01T00:00:00.000000+00:00", "type": "x", "actorId": None, "actorName": None,
              "ip": None, "target": None, "detail": {}}
    forged = digest(row[0], fields)
    await _sql(database, f"UPDATE audit_events SET type = 'x', hash = '{forged}' WHERE id = 2")
    assert (await _verdict(database)).broken_at == 2  # its fields (``at``) differ from what was hashed
    assert (await _verdict(database)).reason is not None


async def test_retention_deletes_old_events_and_what_is_left_verifies(database: Database) -> None:
    await _append(database, 4)
    old = utcnow() - timedelta(days=400)
    # the first three are made old by moving their time back (their hashes then no longer match, which
    # retention does not care about and verify no longer sees once they are gone)
    async with database.session() as s:
        await s.execute(update(AuditEvent).where(AuditEvent.id <= 3).values(at=old))
    async with database.session() as s:
        assert await service.purge(db=s, older_than=timedelta(days=365)) == 3
    verdict = await _verdict(database)
    assert (verdict.broken_at, verdict.checked) == (None, 1)
    await _append(database, 2)
    assert (await _verdict(database)).checked == 3
    async with database.session() as s:  # everything old: the chain starts after its head
        await s.execute(update(AuditEvent).values(at=old))
    async with database.session() as s:
        assert await service.purge(db=s, older_than=timedelta(days=365)) == 3
    assert (await _verdict(database)).broken_at is None
    await _append(database, 1)
    verdict = await _verdict(database)
    assert (verdict.broken_at, verdict.checked) == (None, 1)


async def test_two_appenders_at_once_make_one_chain(database: Database) -> None:
    await asyncio.gather(_append(database, 15, kind="a"), _append(database, 15, kind="b"))
    verdict = await _verdict(database)
    assert (verdict.broken_at, verdict.checked) == (None, 30)
    async with database.session() as s:
        ids = [r[0] for r in (await s.execute(text("SELECT id FROM audit_events ORDER BY id"))).all()]
    assert ids == list(range(1, 31))


async def test_a_batch_is_appended_in_order(database: Database) -> None:
    async with database.session() as s:
        ids = await service.record_many(db=s, entries=[Entry(type="tool.call", actor=Actor(id=1), detail={"i": i})
                                                      for i in range(3)])
    assert ids == [1, 2, 3]
    assert (await _verdict(database)).checked == 3


def _cli_verify(url: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENTLOFT_DATABASE_URL": url}
    return subprocess.run([sys.executable, "-m", "agentloft.cli", "audit", "verify"], env=env, capture_output=True,
                          text=True, timeout=120)


async def test_the_cli_says_ok_or_names_the_first_broken_link(database: Database) -> None:
    await _append(database, 3)
    ok = await asyncio.to_thread(_cli_verify, database.url)
    assert ok.returncode == 0 and ok.stdout.startswith("OK: 3 events"), ok.stderr
    await _sql(database, "UPDATE audit_events SET detail = '{\"n\": 9}' WHERE id = 2")
    broken = await asyncio.to_thread(_cli_verify, database.url)
    assert broken.returncode == 1 and broken.stdout.startswith("BROKEN at event 2:"), broken.stdout + broken.stderr
