"""The background job queue (``core.jobs``) on a real database (SQLite, or PostgreSQL in its pass): runners
claim due jobs with leases, renew them, retry with a pause, give up with the reason, take over the jobs of
a worker that died, and never run one job twice at once. A real server process killed during a job is in
``tests/knowledge/test_killed_worker.py``."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator, Callable
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from sqlalchemy import select, update

from agentloft.core import jobs
from agentloft.core.db import Database, utcnow
from agentloft.core.jobs import Job, JobRunner
from tests.pg import database as pg
from tests.support import wait_until


@pytest.fixture
async def db(tmp_path: Path, template_db: Path) -> AsyncIterator[Database]:
    """The app's ``Database`` on a migrated database of this pass's kind."""
    if pg.server_url():
        url = os.environ["AGENTLOFT_DATABASE_URL"]  # the test's own clone (tests/conftest.py)
    else:
        shutil.copy(template_db, tmp_path / "jobs.db")
        url = f"sqlite+aiosqlite:///{tmp_path / 'jobs.db'}"
    database = Database(url)
    yield database
    await database.dispose()


@pytest.fixture
async def runners(db: Database) -> AsyncIterator[Callable[..., JobRunner]]:
    """Start runners on ``db`` (stopped afterwards). A long poll by default, so a test that passes shows the
    wake-up (or the given poll) at work."""
    started: list[JobRunner] = []

    async def start(handlers: dict[str, Any], **options: Any) -> JobRunner:
        values: dict[str, Any] = {"poll_seconds": 60.0, "lease_seconds": 30.0, "max_attempts": 3,
                                  "concurrency": 2, "retry_base_seconds": 0.05}
        values.update(options)
        runner = JobRunner(db, **values)
        for kind, handler in handlers.items():
            if isinstance(handler, tuple):
                runner.register(kind, handler[0], failed=handler[1])
            else:
                runner.register(kind, handler)
        await runner.start(SimpleNamespace(name="rt"))  # type: ignore[arg-type]
        started.append(runner)
        return runner

    yield start  # type: ignore[misc]
    for runner in started:
        await runner.stop()


async def enqueue(db: Database, kind: str, payload: dict[str, Any], **kw: Any) -> str:
    async with db.session() as s:
        return await jobs.enqueue(s, kind, payload, **kw)


async def job(db: Database, job_id: str) -> Job:
    async with db.session() as s:
        row = await jobs.get(s, job_id)
        assert row is not None
        return row


async def status_is(db: Database, job_id: str, status: str) -> bool:
    return (await job(db, job_id)).status == status


async def test_a_committed_job_runs_at_once_with_its_payload(db: Database, runners: Callable[..., Any]) -> None:
    seen: list[tuple[Any, dict[str, Any]]] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        seen.append((rt.name, payload))

    runner = await runners({"greet": run})  # polls once a minute: only the commit's wake-up starts it in time
    await wait_until(lambda: runner.rounds >= 1)  # it has looked once, and waits now
    job_id = await enqueue(db, "greet", {"who": "world"})
    await wait_until(lambda: status_is(db, job_id, "done"))
    assert seen == [("rt", {"who": "world"})]
    done = await job(db, job_id)
    assert (done.attempts, done.lease_owner, done.error) == (1, None, None)


async def test_a_job_rolled_back_with_its_transaction_never_runs(db: Database, runners: Callable[..., Any]) -> None:
    ran: list[str] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        ran.append(payload["n"])

    await runners({"count": run}, poll_seconds=0.05)
    with pytest.raises(RuntimeError):
        async with db.session() as s:
            await jobs.enqueue(s, "count", {"n": "lost"})
            raise RuntimeError("the caller's transaction fails")
    kept = await enqueue(db, "count", {"n": "kept"})
    await wait_until(lambda: status_is(db, kept, "done"))
    async with db.session() as s:
        assert [j.payload for j in (await s.execute(select(Job))).scalars()] == [{"n": "kept"}]
    assert ran == ["kept"]


async def test_a_failing_job_is_retried_then_fails_with_its_reason(db: Database, runners: Callable[..., Any]) -> None:
    attempts: list[float] = []
    told: list[tuple[dict[str, Any], str]] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        attempts.append(asyncio.get_running_loop().time())
        raise ValueError(f"cannot read {payload['file']}")

    async def failed(rt: Any, payload: dict[str, Any], reason: str) -> None:
        told.append((payload, reason))

    await runners({"read": (run, failed)}, poll_seconds=0.02, max_attempts=3, retry_base_seconds=0.2)
    job_id = await enqueue(db, "read", {"file": "a.pdf"})
    await wait_until(lambda: status_is(db, job_id, "failed"))
    row = await job(db, job_id)
    assert (row.attempts, row.error, row.lease_owner) == (3, "ValueError: cannot read a.pdf", None)
    assert told == [({"file": "a.pdf"}, "ValueError: cannot read a.pdf")]
    # the pauses double: 0.2 s, then 0.4 s (at least; a poll may add a little)
    assert attempts[1] - attempts[0] >= 0.2 and attempts[2] - attempts[1] >= 0.4


async def test_a_job_that_fails_once_succeeds_on_its_retry(db: Database, runners: Callable[..., Any]) -> None:
    calls: list[int] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("the store is down for now")

    await runners({"flaky": run}, poll_seconds=0.02)
    job_id = await enqueue(db, "flaky", {})
    await wait_until(lambda: status_is(db, job_id, "done"))
    row = await job(db, job_id)
    assert (row.attempts, row.error, len(calls)) == (2, None, 2)


async def test_the_job_of_a_worker_that_died_is_taken_over(db: Database, runners: Callable[..., Any]) -> None:
    """A job left ``running`` by a worker whose lease ran out (it was killed) is claimed again and counted."""
    ran: list[str] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        ran.append(payload["id"])

    job_id = await enqueue(db, "work", {"id": "x"})
    async with db.session() as s:  # as a killed worker left it: running, its lease 1 s past
        await s.execute(update(Job).where(Job.id == job_id).values(
            status="running", attempts=1, lease_owner="dead:1:worker", lease_until=utcnow() - timedelta(seconds=1)))
    await runners({"work": run}, poll_seconds=0.05)
    await wait_until(lambda: status_is(db, job_id, "done"))
    row = await job(db, job_id)
    assert (ran, row.attempts) == (["x"], 2)


async def test_a_live_lease_is_left_alone(db: Database, runners: Callable[..., Any]) -> None:
    ran: list[str] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        ran.append("ran")

    job_id = await enqueue(db, "work", {})
    async with db.session() as s:  # another worker holds it, its lease good for a minute
        await s.execute(update(Job).where(Job.id == job_id).values(
            status="running", attempts=1, lease_owner="alive:1:worker", lease_until=utcnow() + timedelta(minutes=1)))
    runner = await runners({"work": run}, poll_seconds=0.02)
    other = await enqueue(db, "work", {})  # a job it may take, to know it has looked
    await wait_until(lambda: status_is(db, other, "done"))
    assert ran == ["ran"] and runner.running == 0
    assert (await job(db, job_id)).lease_owner == "alive:1:worker"


async def test_a_job_whose_workers_keep_dying_fails_for_good(db: Database, runners: Callable[..., Any]) -> None:
    ran: list[str] = []
    told: list[str] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        ran.append("ran")

    async def failed(rt: Any, payload: dict[str, Any], reason: str) -> None:
        told.append(reason)

    job_id = await enqueue(db, "work", {})
    async with db.session() as s:  # its third worker died: no fourth attempt
        await s.execute(update(Job).where(Job.id == job_id).values(
            status="running", attempts=3, lease_owner="dead:3:worker", lease_until=utcnow() - timedelta(seconds=1)))
    await runners({"work": (run, failed)}, poll_seconds=0.05, max_attempts=3)
    await wait_until(lambda: status_is(db, job_id, "failed"))
    reason = (await job(db, job_id)).error or ""
    assert ran == [] and "stopped 3 times before it finished" in reason and told == [reason]


async def test_a_long_job_keeps_its_lease_and_runs_once(db: Database, runners: Callable[..., Any]) -> None:
    """Running for several lease lengths, the job is renewed, so a second worker polling all along never
    claims it too."""
    started: list[str] = []
    release = asyncio.Event()

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        started.append("started")
        await release.wait()

    first = await runners({"long": run}, lease_seconds=1.0, poll_seconds=0.05)
    job_id = await enqueue(db, "long", {})
    await wait_until(lambda: first.running == 1)
    await runners({"long": run}, lease_seconds=1.0, poll_seconds=0.05)
    lease_end = (await job(db, job_id)).lease_until
    assert lease_end is not None
    await wait_until(lambda: utcnow() > lease_end + timedelta(seconds=2), limit_s=10)  # 3 lease lengths on
    release.set()
    await wait_until(lambda: status_is(db, job_id, "done"))
    assert started == ["started"] and (await job(db, job_id)).attempts == 1


async def test_a_worker_that_lost_its_lease_stops_the_job_and_writes_nothing(
    db: Database, runners: Callable[..., Any]
) -> None:
    cancelled = asyncio.Event()

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    runner = await runners({"long": run}, lease_seconds=1.0)
    job_id = await enqueue(db, "long", {})
    await wait_until(lambda: runner.running == 1)
    async with db.session() as s:  # meanwhile another worker took it over (after a pause of this one)
        await s.execute(update(Job).where(Job.id == job_id).values(lease_owner="other:1:worker"))
    await asyncio.wait_for(cancelled.wait(), 5)
    await wait_until(lambda: runner.running == 0)
    row = await job(db, job_id)
    assert (row.status, row.lease_owner, row.error) == ("running", "other:1:worker", None)


async def test_a_stopping_worker_gives_its_running_jobs_back(db: Database, runners: Callable[..., Any]) -> None:
    async def run(rt: Any, payload: dict[str, Any]) -> None:
        await asyncio.Event().wait()

    runner = await runners({"long": run})
    job_id = await enqueue(db, "long", {})
    await wait_until(lambda: runner.running == 1)
    await runner.stop()
    row = await job(db, job_id)
    assert (row.status, row.attempts, row.lease_owner) == ("queued", 0, None)


async def test_two_workers_run_each_job_exactly_once(db: Database, runners: Callable[..., Any]) -> None:
    ran: list[int] = []

    async def run(rt: Any, payload: dict[str, Any]) -> None:
        ran.append(payload["n"])
        await asyncio.sleep(0)

    await runners({"n": run}, poll_seconds=0.01)
    await runners({"n": run}, poll_seconds=0.01)
    ids = [await enqueue(db, "n", {"n": n}) for n in range(30)]

    async def all_done() -> bool:
        async with db.session() as s:
            rows = (await s.execute(select(Job.status).where(Job.id.in_(ids)))).scalars().all()
        return all(r == "done" for r in rows)

    await wait_until(all_done, limit_s=20)
    assert sorted(ran) == list(range(30))


async def test_a_worker_claims_only_the_kinds_it_has_handlers_for(db: Database, runners: Callable[..., Any]) -> None:
    async def run(rt: Any, payload: dict[str, Any]) -> None:
        return None

    await runners({"known": run}, poll_seconds=0.02)
    unknown = await enqueue(db, "from.a.newer.version", {})
    known = await enqueue(db, "known", {})
    await wait_until(lambda: status_is(db, known, "done"))
    row = await job(db, unknown)
    assert (row.status, row.attempts) == ("queued", 0)


async def test_old_finished_jobs_are_deleted(db: Database, runners: Callable[..., Any]) -> None:
    async def run(rt: Any, payload: dict[str, Any]) -> None:
        return None

    old, recent = await enqueue(db, "x", {}), await enqueue(db, "x", {})
    async with db.session() as s:
        await s.execute(update(Job).where(Job.id == old).values(status="done", updated_at=utcnow() - timedelta(days=2)))
        await s.execute(update(Job).where(Job.id == recent).values(status="done"))
    await runners({"x": run})  # a runner deletes them when it starts, then hourly

    async def gone() -> bool:
        async with db.session() as s:
            return await jobs.get(s, old) is None

    await wait_until(gone)
    assert (await job(db, recent)).status == "done"


def test_a_kind_cannot_be_registered_twice(tmp_path: Path) -> None:
    async def run(rt: Any, payload: dict[str, Any]) -> None:
        return None

    runner = JobRunner(Database(f"sqlite+aiosqlite:///{tmp_path / 'x.db'}"), poll_seconds=1, lease_seconds=1,
                       max_attempts=1, concurrency=1)
    runner.register("x", run)
    with pytest.raises(ValueError, match="already registered"):
        runner.register("x", run)


def test_retry_pauses_double_up_to_a_cap() -> None:
    assert [jobs.retry_pause(n) for n in (1, 2, 3, 4)] == [5.0, 10.0, 20.0, 40.0]
    assert jobs.retry_pause(30) == jobs.RETRY_MAX_S
