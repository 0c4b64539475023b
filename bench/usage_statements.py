"""CPU of the two statements usage adds to a turn, as they run now against the shape they had before: the
usage record's INSERT (``usage.service.record``) and the budget check's sum (``usage.budgets._used``).
Before, each call built its statement (``insert(...).values(...)`` through the ORM session, a ``select`` of
ten SQL functions) and so paid for building it and for keying it in the compiled cache; now both are built
once and run with bound values. Alternating blocks of ``--calls`` calls in one process over ``--rounds``
rounds (medians), each in a transaction of its own as in a turn (rolled back: every sum reads the same
``--rows`` records of the user this month), on SQLite in a temporary directory or on a
new PostgreSQL database (dropped afterwards); CPU is this process's (``time.process_time``), so the
machine's other load counts little.

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
from datetime import date
from typing import Any

from sqlalchemy import case, func, insert, select, text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from agentloft.auth.models import User
from agentloft.core import metadata
from agentloft.core.db import Base, make_engine, utcnow
from agentloft.usage import budgets
from agentloft.usage import service as usage_service
from agentloft.usage.models import UsageRecord

Call = Callable[[AsyncSession, int], Awaitable[Any]]


def _values(user_id: int) -> dict[str, Any]:
    now = utcnow()
    return {"user_id": user_id, "agent_id": 1, "model_id": 1, "session_id": "s", "source": "chat",
            "input_tokens": 10, "output_tokens": 5, "cache_read_tokens": 0, "cache_write_tokens": 0,
            "cost": None, "day": now.date(), "created_at": now}


async def record_before(db: AsyncSession, user_id: int) -> None:
    await db.execute(insert(UsageRecord).values(**_values(user_id)))


async def record_now(db: AsyncSession, user_id: int) -> None:
    await usage_service.record(db=db, user_id=user_id, source="chat", tokens=usage_service.Tokens(10, 5),
                               model=None, agent_id=1, session_id="s")


async def sum_before(db: AsyncSession, user_id: int) -> Any:
    today = date.today()
    tokens = UsageRecord.input_tokens + UsageRecord.output_tokens
    cost = func.coalesce(UsageRecord.cost, 0.0)
    is_today = UsageRecord.day >= today
    return (await db.execute(
        select(func.coalesce(func.sum(tokens), 0), func.coalesce(func.sum(cost), 0.0),
               func.coalesce(func.sum(case((is_today, tokens), else_=0)), 0),
               func.coalesce(func.sum(case((is_today, cost), else_=0.0)), 0.0))
        .where(UsageRecord.user_id == user_id, UsageRecord.day >= today.replace(day=1)))).one()


async def sum_now(db: AsyncSession, user_id: int) -> Any:
    today = date.today()
    return await budgets._used(db, user_id=user_id, today=today, since=today.replace(day=1))


async def nothing(db: AsyncSession, user_id: int) -> None:
    return None


VARIANTS: dict[str, Call] = {"empty transaction": nothing, "record, before": record_before,
                             "record, now": record_now, "budget sum, before": sum_before,
                             "budget sum, now": sum_now}


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
        today = date.today()
        values = [{**_values(user.id), "day": today.replace(day=1 + n % today.day)} for n in range(rows)]
        if values:
            await db.execute(insert(UsageRecord), values)
        return user.id


async def measure(url: str, rounds: int, calls: int, rows: int) -> dict[str, float]:
    metadata.import_all_models()
    engine = make_engine(url)
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
    sessions = async_sessionmaker(engine, expire_on_commit=False)
    user_id = await _seed(sessions, rows)
    samples: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for call in VARIANTS.values():  # warm every path once
        await _block(sessions, call, user_id, 20)
    for _ in range(rounds):
        for name, call in VARIANTS.items():
            samples[name].append(await _block(sessions, call, user_id, calls))
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
    for what in ("record", "budget sum"):
        before, now = figures[f"{what}, before"] - floor, figures[f"{what}, now"] - floor
        print(f"  {what}: now / before = {now / before:.2f}x ({before:.3f} -> {now:.3f} ms)")


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
