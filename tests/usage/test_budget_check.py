"""What the budget check costs a turn, on a database of its own: on SQLite its sum runs on the event loop,
not on the connection's thread, though it is the first statement of a write transaction (where a SELECT
would otherwise hop to the thread for its execute and its fetch: ``core.db_sqlite``); and a turn that
cannot use up any budget runs without the check between its model calls."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from sqlalchemy import delete, event, insert

from agentloft.auth.models import User
from agentloft.core import migrate
from agentloft.core.db import Database, utcnow
from agentloft.core.readcache import ReadCache
from agentloft.core.runtime import Runtime
from agentloft.llm.models import ModelConfig
from agentloft.usage import budgets
from agentloft.usage.models import Budget, UsageDay


@pytest.fixture
async def database(tmp_path: Path) -> AsyncIterator[Database]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'budgets.db'}"
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url)
    async with db.session() as s:
        await s.execute(insert(User), [{"id": n, "username": f"u{n}", "password_hash": "-", "role": "user"}
                                       for n in (1, 2)])
    yield db
    await db.dispose()


async def test_the_sum_runs_on_the_event_loop_and_adds_up_the_period(database: Database) -> None:
    today = utcnow().date()
    earlier = today.replace(day=1) if today.day > 1 else today
    rows = [{"user_id": 1, "day": today, "tokens": 30, "cost": 0.5},
            {"user_id": 2, "day": today, "tokens": 1000, "cost": 9.0}]  # another user's day counts not
    if earlier != today:
        rows.append({"user_id": 1, "day": earlier, "tokens": 12, "cost": 0.25})
    rows.append({"user_id": 1, "day": today.replace(day=1) - timedelta(days=1), "tokens": 500, "cost": 5.0})
    async with database.session() as db:
        await db.execute(insert(UsageDay), rows)

    threads: list[int] = []

    def noted(statement: str) -> None:  # called on the thread that runs the statement in SQLite
        if "usage_daily" in statement:
            threads.append(threading.get_ident())

    def on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.driver_connection._connection.set_trace_callback(noted)  # aiosqlite's sqlite3 connection

    await database.engine.dispose()  # the connections opened from here on trace their statements
    event.listen(database.engine.sync_engine, "connect", on_connect)
    async with database.session() as db:  # as in a turn: the write transaction's first statement
        used = await budgets._used(db, user_id=1, today=today, since=today.replace(day=1))
    assert threads == [threading.get_ident()]
    month_tokens = 30 + (12 if earlier != today else 0)
    assert used["day"] == (30, pytest.approx(0.5))
    assert used["month"][0] == month_tokens


def _model(priced: bool) -> ModelConfig:
    price = 1.0 if priced else None
    return ModelConfig(id=1, name="m", provider="openai", model="m", input_price_per_mtok=price,
                       output_price_per_mtok=price)


async def _add_budget(database: Database, **limits: Any) -> None:
    async with database.session() as db:
        await db.execute(delete(Budget))
        await db.execute(insert(Budget), [{"scope": "everyone", "scope_id": None, "period": "month",
                                           "max_tokens": None, "max_cost": None, **limits}])


async def test_a_turn_runs_unchecked_when_no_budget_can_run_out_during_it(database: Database) -> None:
    """A cost budget cannot be used up by a model without prices (its runs cost nothing), so such a turn
    needs no check between its model calls and runs on the model itself; a token budget, or a cost budget
    with a priced model, is checked; one already used up stays in (a resumed turn's first call refuses)."""
    rt = cast(Runtime, SimpleNamespace(db=SimpleNamespace(cache=ReadCache(enabled=False))))

    async def refuse_over(priced: bool) -> budgets.Allowance | None:
        async with database.session() as db:
            return await budgets.refuse_over(rt, db, user_id=1, model=_model(priced))

    async def allowance(priced: bool) -> budgets.Allowance | None:
        async with database.session() as db:
            return await budgets.allowance(rt, db, user_id=1, model=_model(priced))

    await _add_budget(database, max_cost=1.0)
    assert await refuse_over(priced=False) is None
    assert await allowance(priced=False) is None
    assert await refuse_over(priced=True) is not None
    await _add_budget(database, max_tokens=10**9)
    assert await refuse_over(priced=False) is not None
    async with database.session() as db:
        await db.execute(insert(UsageDay), [{"user_id": 1, "day": utcnow().date(), "tokens": 1, "cost": 2.0}])
    await _add_budget(database, max_cost=1.0)
    used_up = await allowance(priced=False)
    assert used_up is not None and used_up.standings[0].over()
