"""CPU of the two statements usage adds to a turn, as they run now against the shape they had at migration
0037: the usage record's INSERT (``usage.service.record``; now the database also adds it to the user's day
in ``usage_daily``, by a trigger in the same statement) and the budget check's sum (``usage.budgets._used``;
then over the user's records of the period, now over their days: at most 31 rows). The 0037 record is
timed on a twin of ``usage_records`` without the trigger; the 0037 sum is its statement, run as it was
(through the session) over the same records; "thread" is today's sum as it ran until it was moved onto the
event loop on SQLite (``budgets._used``). Blocks of ``--calls`` calls in one process, the variants' order
rotated each of ``--rounds`` rounds (medians), each in a transaction of its own as in a turn (rolled back: every sum
reads the same ``--rows`` records of the user this month), on SQLite in a temporary directory or on a new
PostgreSQL database (dropped afterwards), both built by the migrations; CPU is this process's
(``time.process_time``), so the machine's other load counts little.

    python -m bench.usage_statements [--rounds 7] [--calls 300] [--rows 300] [--postgres postgresql+asyncpg://u:pw@host/postgres]

Goal (issue 33): usage and budgets add at most 0.5 ms of CPU to a turn.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import MetaData, Table, bindparam, case, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from agentloft.auth.models import User
from agentloft.core import metadata, migrate
from agentloft.core.db import make_engine, utcnow
from agentloft.usage import budgets
from agentloft.usage import service as usage_service
from agentloft.usage.models import UsageRecord

Call = Callable[[AsyncSession, int], Awaitable[Any]]


def _values(user_id: int) -> dict[str, Any]:
    now = utcnow()
    return {"user_id": user_id, "agent_id": 1, "model_id": 1, "session_id": "s", "source": "chat",
            "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0, "cache_write_tokens": 0,
            "cost": None, "day": now.date(), "created_at": now}


# A twin of ``usage_records`` without migration 0038's trigger: the record as it was written at 0037.
_PLAIN = Table("bench_usage_records_plain", MetaData(), *(c._copy() for c in UsageRecord.__table__.columns))
_PLAIN_INSERT = insert(_PLAIN)


def _records_sum() -> Any:
    """The 0037 check: the user's tokens and cost over their records since ``since`` and since ``today``."""
    tokens = UsageRecord.input_tokens + UsageRecord.output_tokens
    cost = func.coalesce(UsageRecord.cost, 0.0)
    is_today = UsageRecord.day >= bindparam("today")
    return (select(func.coalesce(func.sum(tokens), 0), func.coalesce(func.sum(cost), 0.0),
                   func.coalesce(func.sum(case((is_today, tokens), else_=0)), 0),
                   func.coalesce(func.sum(case((is_today, cost), else_=0.0)), 0.0))
            .where(UsageRecord.user_id == bindparam("user_id"), UsageRecord.day >= bindparam("since")))


_RECORDS_SUM = _records_sum()


async def record_0037(db: AsyncSession, user_id: int) -> None:
    await (await db.connection()).execute(_PLAIN_INSERT, _values(user_id))


async def record_now(db: AsyncSession, user_id: int) -> None:
    await usage_service.record(db=db, user_id=user_id, source="chat", tokens=usage_service.Tokens(10, 5),
                               model=None, agent_id=1, session_id="s")


async def sum_0037(db: AsyncSession, user_id: int) -> Any:
    today = utcnow().date()
    return (await db.execute(_RECORDS_SUM, {"user_id": user_id, "today": today,
                                            "since": today.replace(day=1)})).one()


async def sum_now(db: AsyncSession, user_id: int) -> Any:
    today = utcnow().date()
    return await budgets._used(db, user_id=user_id, today=today, since=today.replace(day=1))


async def sum_thread(db: AsyncSession, user_id: int) -> Any:
    """The check as it ran until 2026-12-07 23:00 UTC: the same statement, on the connection's thread (on
    SQLite; on PostgreSQL this is the same as now)."""
    today = utcnow().date()
    connection = await db.connection()
    return (await connection.execute(budgets._USED, {"user_id": user_id, "today": today,
                                                     "since": today.replace(day=1)})).one()


# The sum first, as in a turn: the check is the first statement of the transaction that saves the user's
# message, before any write; the record is the first of the one that saves the reply.
async def both_0037(db: AsyncSession, user_id: int) -> None:
    await sum_0037(db, user_id)
    await record_0037(db, user_id)


async def both_thread(db: AsyncSession, user_id: int) -> None:
    await sum_thread(db, user_id)
    await record_now(db, user_id)


async def both_now(db: AsyncSession, user_id: int) -> None:
    await sum_now(db, user_id)
    await record_now(db, user_id)


async def nothing(db: AsyncSession, user_id: int) -> None:
    return None


VARIANTS: dict[str, Call] = {"empty transaction": nothing, "record, 0037": record_0037, "record, now": record_now,
                             "budget sum, 0037": sum_0037, "budget sum, thread": sum_thread,
                             "budget sum, now": sum_now, "record + sum, 0037": both_0037,
                             "record + sum, thread": both_thread, "record + sum, now": both_now}


async def _block(sessions: async_sessionmaker[AsyncSession], call: Call, user_id: int, calls: int) -> float:
    """CPU milliseconds per call, each call in a transaction of its own, rolled back so that every block
    sums over the same rows."""
    start = time.process_time()
    for _ in range(calls):
        async with sessions() as db:
            await db.execute(text("SELECT 1"))  # the transaction a turn has open anyway
            await call(db, user_id)
            await db.rollback()
    return (time.process_time() - start) / calls * 1000


async def _seed(sessions: async_sessionmaker[AsyncSession], rows: int) -> int:
    """The user whose usage is summed, with ``rows`` records this month (today's and the days before)."""
    async with sessions() as db, db.begin():
        user = User(username="bench", password_hash="-", role="user")
        db.add(user)
        await db.flush()
        today = utcnow().date()
        values = [{**_values(user.id), "day": today.replace(day=1 + n % today.day)} for n in range(rows)]
        if values:
            await db.execute(insert(UsageRecord), values)
        return user.id


async def measure(url: str, rounds: int, calls: int, rows: int) -> dict[str, float]:
    metadata.import_all_models()
    await asyncio.to_thread(migrate.upgrade, url)  # the schema with its triggers (migration 0038's)
    engine = make_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(_PLAIN.metadata.create_all)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    user_id = await _seed(sessions, rows)
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for call in VARIANTS.values():  # warm every path once
        await _block(sessions, call, user_id, 20)
    names = list(VARIANTS)
    for i in range(rounds):  # the order rotated each round, so no variant always follows the same one
        for name in names[i % len(names):] + names[:i % len(names)]:
            samples[name].append(await _block(sessions, VARIANTS[name], user_id, calls))
    await engine.dispose()
    return {name: statistics.median(xs) for name, xs in samples.items()}


async def _postgres(server: str, rounds: int, calls: int, rows: int) -> dict[str, float]:
    name = f"agentloft_bench_usage_{uuid.uuid4().hex[:8]}"
    admin = create_async_engine(server, isolation_level="AUTOCOMMIT")
    async with admin.connect() as conn:
        await conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        return await measure(server.rsplit("/", 1)[0] + "/" + name, rounds, calls, rows)
    finally:
        async with admin.connect() as conn:
            await conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
        await admin.dispose()


def report(figures: dict[str, float]) -> None:
    floor = figures["empty transaction"]
    print(f"{'':22} CPU per call (over an empty transaction)")
    for name, ms in figures.items():
        print(f"  {name:20} {ms:6.3f} ms  (+{ms - floor:.3f} ms)")
    for what in ("record", "budget sum", "record + sum"):
        for then in ("0037", "thread"):
            if f"{what}, {then}" in figures:
                before, now = figures[f"{what}, {then}"] - floor, figures[f"{what}, now"] - floor
                print(f"  {what}: now / {then} = {now / before:.2f}x ({before:.3f} -> {now:.3f} ms)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rows", type=int, default=300, help="the user's usage records this month")
    parser.add_argument("--postgres", help="a PostgreSQL server URL (postgresql+asyncpg://…/postgres)")
    args = parser.parse_args()
    if args.postgres:
        figures = asyncio.run(_postgres(args.postgres, args.rounds, args.calls, args.rows))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            figures = asyncio.run(measure(f"sqlite+aiosqlite:///{tmp}/bench.sqlite", args.rounds, args.calls,
                                         args.rows))
    print(f"database: {'postgresql' if args.postgres else 'sqlite'}, {args.rows} records of the user this month")
    report(figures)


if __name__ == "__main__":
    main()
