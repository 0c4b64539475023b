"""Background jobs: a queue kept in the database, claimed with leases, run by every server process.

Why the database: work such as reading an uploaded PDF or indexing a file must survive a restart and run on
whichever worker is free, with no new service to run. A job is a row (``jobs``); ``enqueue`` adds it inside
the caller's transaction, so it exists exactly when what it works on was committed.

How a job runs:

- Every process runs a ``JobRunner`` (started in the app's lifespan). It claims due jobs (``queued`` and
  ``run_after`` passed, or ``running`` with a lease that ran out) by setting ``status='running'``, its own
  ``lease_owner`` and ``lease_until``, and counting the attempt, in one UPDATE: on PostgreSQL over rows
  picked ``FOR UPDATE SKIP LOCKED``, so two workers never claim the same job and never wait on each
  other; on SQLite the single writer makes the UPDATE atomic by itself. An idle poll is a read only.
- While the handler runs, the lease is renewed every third of ``AGENTLOFT_JOB_LEASE_SECONDS``. Every write
  about the job is conditional on still holding it, so a worker that lost its lease (a long pause, after
  which another worker took the job) changes nothing and stops its handler.
- A handler that returns marks the job ``done``. One that raises is retried after a pause that doubles each
  time, up to ``AGENTLOFT_JOB_MAX_ATTEMPTS`` attempts, then marked ``failed`` with the reason, and its
  kind's ``failed`` hook tells the domain (a file is marked failed with that reason). A worker killed while
  running a job stops renewing its lease; once it runs out another worker claims the job again, which
  counts as the next attempt. A worker told to stop puts its running jobs back (without counting them).
- A job committed in this process wakes its runners at once (an ``after_commit`` hook of the session that
  enqueued it); jobs queued by other processes and retries that come due are found by a poll every
  ``AGENTLOFT_JOB_POLL_SECONDS``.

Handlers are registered by kind at start-up (``app.register_jobs``), never on import; each must be
idempotent, since a job may run again after its worker died half-way. Finished jobs are kept for a while
(``KEEP_DONE``, ``KEEP_FAILED``) so that what happened can be looked up, then deleted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import weakref
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import JSON, Index, Integer, String, Text, and_, delete, event, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, Session, mapped_column

from agentloft.core.db import Base, Database, TimestampMixin, UTCDateTime, rows_matched, utcnow
from agentloft.core.ids import new_id

if TYPE_CHECKING:
    from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

JobStatus = Literal["queued", "running", "done", "failed"]
# How long finished jobs stay in the table, and how often a worker deletes older ones.
KEEP_DONE = timedelta(days=1)
KEEP_FAILED = timedelta(days=30)
PURGE_EVERY_S = 3600.0
# The first retry's pause; each further one waits twice as long, at most ``RETRY_MAX_S``.
RETRY_BASE_S = 5.0
RETRY_MAX_S = 600.0
# How long a stopping worker waits for its cancelled handlers to give their jobs back.
STOP_WAIT_S = 5.0
ERROR_CHARS = 2000  # the longest error text kept on a job


class Job(TimestampMixin, Base):
    """One unit of background work. ``payload`` is the handler's input (ids, never the data itself)."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(64), nullable=False)
    payload: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False)
    status: Mapped[JobStatus] = mapped_column(String(16), nullable=False, default="queued")
    attempts: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    lease_owner: Mapped[str | None] = mapped_column(String(100), nullable=True)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    run_after: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False, default=utcnow)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)

    __table_args__ = (Index("idx_jobs_status_run_after", "status", "run_after"),)


# --- queueing ----------------------------------------------------------------------------------------

# Every runner of this process, so that a commit anywhere in it can wake them (several apps share a
# process in the tests; waking one that has nothing to do costs it a read).
_RUNNERS: weakref.WeakSet[JobRunner] = weakref.WeakSet()
_WAKES = "agentloft_jobs_wake"  # key in a session's ``info``: its after-commit hook is installed


def _wake_runners(_session: Session) -> None:
    for runner in list(_RUNNERS):
        runner.wake()


async def enqueue(db: AsyncSession, kind: str, payload: dict[str, Any], *, delay_seconds: float = 0) -> str:
    """Add a job to the caller's transaction; it can run once that commits. Returns its id."""
    job = Job(id=new_id("jb"), kind=kind, payload=payload, status="queued", attempts=0,
              run_after=utcnow() + timedelta(seconds=delay_seconds))
    db.add(job)
    await db.flush()
    if not db.info.get(_WAKES):
        db.info[_WAKES] = True
        event.listen(db.sync_session, "after_commit", _wake_runners)
    return job.id


async def get(db: AsyncSession, job_id: str) -> Job | None:
    return await db.get(Job, job_id)


# --- running -----------------------------------------------------------------------------------------

Run = Callable[["Runtime", dict[str, Any]], Coroutine[Any, Any, None]]
Failed = Callable[["Runtime", dict[str, Any], str], Coroutine[Any, Any, None]]


@dataclass(frozen=True)
class Handler:
    """What runs a kind of job, and what tells its domain that a job of it failed for good."""

    run: Run
    failed: Failed | None = None


@dataclass(frozen=True)
class Claimed:
    id: str
    kind: str
    payload: dict[str, Any]
    attempts: int


def retry_pause(attempts: int, base_s: float = RETRY_BASE_S) -> float:
    """Seconds before the next try after ``attempts`` failed ones: base, 2 × base, 4 × base…"""
    return min(base_s * 2 ** max(attempts - 1, 0), RETRY_MAX_S)


def describe(exc: BaseException) -> str:
    text = str(exc).strip()
    return (f"{type(exc).__name__}: {text}" if text else type(exc).__name__)[:ERROR_CHARS]


class JobRunner:
    """Claims and runs this process's share of the jobs (see the module docstring)."""

    def __init__(self, db: Database, *, poll_seconds: float, lease_seconds: float, max_attempts: int,
                 concurrency: int, retry_base_seconds: float = RETRY_BASE_S) -> None:
        self.db = db
        self.poll_s = poll_seconds
        self.lease_s = lease_seconds
        self.max_attempts = max_attempts
        self.concurrency = concurrency
        self.retry_base_s = retry_base_seconds
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{new_id('jw')}"
        self.handlers: dict[str, Handler] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._wake: asyncio.Event | None = None
        self._main: asyncio.Task[None] | None = None
        self._rt: Runtime | None = None
        self._last_purge = 0.0
        self.rounds = 0
        """How often this runner has looked for due jobs (each wake-up and each poll is one)."""

    def register(self, kind: str, run: Run, *, failed: Failed | None = None) -> None:
        """Name the handler of ``kind``; a kind registered twice is a start-up error."""
        if kind in self.handlers:
            raise ValueError(f"a handler for job kind {kind!r} is already registered")
        self.handlers[kind] = Handler(run, failed)

    @property
    def running(self) -> int:
        return len(self._tasks)

    async def start(self, rt: Runtime) -> None:
        self._rt = rt
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._main = asyncio.create_task(self._serve(), name="agentloft-jobs")
        _RUNNERS.add(self)

    def wake(self) -> None:
        """Look for jobs now (from any thread)."""
        loop, wake = self._loop, self._wake
        if loop is not None and wake is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(wake.set)

    async def stop(self) -> None:
        """Stop claiming, cancel the running handlers and give their jobs back for another worker."""
        _RUNNERS.discard(self)
        if self._main is not None:
            self._main.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._main
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=STOP_WAIT_S)

    # --- the loop --------------------------------------------------------------------------------------

    async def _serve(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            free = self.concurrency - len(self._tasks)
            if free > 0:
                try:
                    for job in await self._claim(free):
                        self._spawn(job)
                    await self._purge_now_and_then()
                except Exception as exc:  # the database is down for now: the next round tries again
                    log.warning("claiming jobs failed: %s", exc)
            self.rounds += 1
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.poll_s)

    def _spawn(self, job: Claimed) -> None:
        task = asyncio.create_task(self._run(job), name=f"agentloft-job-{job.id}")
        self._tasks[job.id] = task

        def done(_task: asyncio.Task[None]) -> None:
            self._tasks.pop(job.id, None)
            if self._wake is not None:
                self._wake.set()  # a slot is free

        task.add_done_callback(done)

    def _due(self, now: datetime) -> Any:
        return and_(Job.kind.in_(list(self.handlers)),
                    or_(and_(Job.status == "queued", Job.run_after <= now),
                        and_(Job.status == "running", Job.lease_until < now)))

    async def _claim(self, limit: int) -> list[Claimed]:
        """Up to ``limit`` due jobs, now leased to this worker with their attempt counted."""
        if not self.handlers:
            return []
        now = utcnow()
        async with self.db.read_session() as db:
            if (await db.execute(select(Job.id).where(self._due(now)).limit(1))).first() is None:
                return []
        picked = (select(Job.id).where(self._due(now)).order_by(Job.run_after).limit(limit)
                  .with_for_update(skip_locked=True))
        stmt = (update(Job).where(Job.id.in_(picked.scalar_subquery()), self._due(now))
                .values(status="running", lease_owner=self.worker_id, lease_until=now + self._lease(),
                        attempts=Job.attempts + 1, updated_at=now)
                .returning(Job.id, Job.kind, Job.payload, Job.attempts))
        async with self.db.session() as db:
            rows = (await db.execute(stmt)).all()
        return [Claimed(r.id, r.kind, dict(r.payload), r.attempts) for r in rows]

    def _lease(self) -> timedelta:
        return timedelta(seconds=self.lease_s)

    async def _purge_now_and_then(self) -> None:
        assert self._loop is not None
        if self._loop.time() - self._last_purge < PURGE_EVERY_S:
            return
        self._last_purge = self._loop.time()
        now = utcnow()
        async with self.db.session() as db:
            await db.execute(delete(Job).where(or_(
                and_(Job.status == "done", Job.updated_at < now - KEEP_DONE),
                and_(Job.status == "failed", Job.updated_at < now - KEEP_FAILED))))

    # --- one job ---------------------------------------------------------------------------------------

    async def _run(self, job: Claimed) -> None:
        try:
            await self._run_leased(job)
        except asyncio.CancelledError:
            raise
        except Exception:  # writing the outcome failed (the database is down): the lease runs out, and
            log.exception("job %s (%s): its outcome could not be saved", job.id, job.kind)  # it runs again

    async def _run_leased(self, job: Claimed) -> None:
        assert self._rt is not None
        handler = self.handlers[job.kind]
        if job.attempts > self.max_attempts:  # its workers died while running it, every time
            await self._give_up(job, handler, f"stopped {job.attempts - 1} times before it finished "
                                "(its server process was killed or lost the database)")
            return
        work = asyncio.create_task(handler.run(self._rt, job.payload))
        lost = asyncio.Event()
        renewing = asyncio.create_task(self._renew(job, work, lost))
        try:
            await asyncio.shield(work)  # a stop cancels this task, not ``work``: it is handled below
        except asyncio.CancelledError:
            if lost.is_set():  # ``_renew`` stopped ``work``: the job is another worker's now
                log.warning("job %s (%s): its lease went to another worker; stopped here", job.id, job.kind)
                return
            work.cancel()
            with contextlib.suppress(BaseException):
                await work
            await self._put_back(job)
            raise
        except Exception as exc:
            await self._failed_attempt(job, handler, exc)
        else:
            await self._finish(job, status="done", error=None)
        finally:
            renewing.cancel()

    async def _renew(self, job: Claimed, work: asyncio.Task[None], lost: asyncio.Event) -> None:
        """Renew the lease while ``work`` runs; if another worker has taken the job, stop ``work``."""
        while not work.done():
            await asyncio.sleep(self.lease_s / 3)
            try:
                async with self.db.session() as db:
                    held = await rows_matched(db, update(Job).where(*self._ours(job)).values(
                        lease_until=utcnow() + self._lease()))
            except Exception as exc:  # the database is down for now: the lease may still hold next time
                log.warning("renewing the lease of job %s failed: %s", job.id, exc)
                continue
            if not held:
                lost.set()
                work.cancel()
                return

    def _ours(self, job: Claimed) -> tuple[Any, ...]:
        return (Job.id == job.id, Job.status == "running", Job.lease_owner == self.worker_id)

    async def _finish(self, job: Claimed, *, status: JobStatus, error: str | None,
                      run_after: datetime | None = None, attempts: int | None = None) -> bool:
        values: dict[str, Any] = {"status": status, "error": error, "lease_owner": None, "lease_until": None}
        if run_after is not None:
            values["run_after"] = run_after
        if attempts is not None:
            values["attempts"] = attempts
        async with self.db.session() as db:
            return bool(await rows_matched(db, update(Job).where(*self._ours(job)).values(**values)))

    async def _failed_attempt(self, job: Claimed, handler: Handler, exc: Exception) -> None:
        reason = describe(exc)
        if job.attempts >= self.max_attempts:
            log.warning("job %s (%s) failed for good after %d attempts: %s", job.id, job.kind, job.attempts, reason)
            await self._give_up(job, handler, reason)
            return
        pause = retry_pause(job.attempts, self.retry_base_s)
        log.warning("job %s (%s) failed (attempt %d), retried in %.0f s: %s", job.id, job.kind, job.attempts,
                    pause, reason)
        await self._finish(job, status="queued", error=reason, run_after=utcnow() + timedelta(seconds=pause))

    async def _give_up(self, job: Claimed, handler: Handler, reason: str) -> None:
        if not await self._finish(job, status="failed", error=reason):
            return  # another worker holds it now
        if handler.failed is not None:
            assert self._rt is not None
            try:
                await handler.failed(self._rt, job.payload, reason)
            except Exception:
                log.exception("the failure hook of job %s (%s) failed", job.id, job.kind)

    async def _put_back(self, job: Claimed) -> None:
        """A stop, not the job's fault: queued again at once, this attempt not counted."""
        try:
            await self._finish(job, status="queued", error=None, run_after=utcnow(),
                               attempts=max(job.attempts - 1, 0))
        except Exception as exc:  # its lease runs out and another worker takes it then
            log.warning("could not give job %s back: %s", job.id, exc)
