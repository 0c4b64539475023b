"""Budgets: how much each person may use per day or month, in tokens (input + output) or in cost.

**Whom a budget limits.** Each budget limits every person it applies to on their own: ``scope`` says who
that is (``user``: one user; ``group``: each member of one group; ``everyone``: each user). A team's
"100,000 tokens a day for everyone" means each person's 100,000, which is what the people asking for quotas
want (one heavy user cannot use up everybody's day), and what keeps a check to one indexed sum over one
user's rows. When several budgets apply, each holds: the first one used up refuses.

**Periods** are UTC: a day budget counts from midnight UTC and resets at the next; a month budget from the
first of the month. What counts is the user's records in ``usage_records`` from the period's first day, as
their sums per day (``usage_daily``, kept by a trigger in each record's own INSERT): the database is the
truth, so every worker sees the same, and the check sums at most 31 rows however many records the user
has (summing the records cost 0.76 ms of a turn's CPU on SQLite at 300 records this month and 2.31 ms at
3,000; the days' sum 0.50 and 0.48: ``bench/usage_statements.py``, docs/benchmarks.md). Why not a covering
index on the records: it spares the table reads, not the per-row work (1.8 ms at 3,000 records).

**When it is checked.** Before a turn starts (``refuse_over``, in the transaction that saves the user's
message, so a refused turn writes nothing and costs no transaction of its own): a user over a budget gets
``429 budget_exceeded`` naming the budget and when it resets, with ``Retry-After``. During the turn, before
each further model call (``Allowance.check``, from what the run used so far: no database read): a reply
whose calls use up the budget stops after the call that did, with the same error as its ``error`` chunk. A
budget may thus be passed by at most one model call, per turn running at once. A title call is not
checked (it is a few tokens after a reply the budget allowed), but it counts. A turn that can use up none
of the user's budgets (cost limits only, on a model without prices) runs without the check, on the model
itself.

**What it costs a turn**: nothing for a user no budget applies to (the budgets come from the read cache
on SQLite); else the one sum, run on SQLite on the event loop rather than the connection's thread, and
a few microseconds per model call (``bench/turn_cost.py --scenarios usage``, docs/benchmarks.md).

``refused`` is the one place every refusal passes through (it logs it). The chat engine, which knows
where the turn's writes go, writes its ``budget.refused`` audit event with ``Standing.audit_detail``: a
refusal before the turn in a transaction of its own (the turn's is rolled back), a refusal between model
calls with the turn's last writes, when the stopped reply is saved.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal

from sqlalchemy import Select, bindparam, case, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.core.db import one_or_404, utcnow
from agentloft.core.db_sqlite import inline_reads
from agentloft.core.errors import NotFound, TooMany, invalid_field, problem
from agentloft.core.runtime import Runtime
from agentloft.groups import service as groups_service
from agentloft.groups.models import Group
from agentloft.llm.models import ModelConfig
from agentloft.usage.models import Budget, Period, UsageDay
from agentloft.usage.schemas import BudgetCreate, BudgetStanding
from agentloft.usage.service import Tokens, cost_of

log = logging.getLogger(__name__)

Refusal = Literal["start", "turn"]
"""When a budget refused: before a turn started, or between the model calls of a running turn."""


def period_start(period: Period, today: date) -> date:
    return today if period == "day" else today.replace(day=1)


def resets_at(period: Period, today: date) -> datetime:
    """When the period that holds ``today`` ends (UTC midnight)."""
    first_of_next_month = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
    nxt = today + timedelta(days=1) if period == "day" else first_of_next_month
    return datetime.combine(nxt, time(0), tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Standing:
    """One budget and what the user used of it this period."""

    budget: Budget
    used_tokens: int
    used_cost: float
    resets_at: datetime

    def over(self, tokens: int = 0, cost: float = 0.0) -> bool:
        """Whether the budget is used up, with ``tokens`` and ``cost`` more used than recorded."""
        b = self.budget
        return self.tokens_over(tokens) or (b.max_cost is not None and self.used_cost + cost >= b.max_cost)

    def tokens_over(self, tokens: int = 0) -> bool:
        b = self.budget
        return b.max_tokens is not None and self.used_tokens + tokens >= b.max_tokens

    def audit_detail(self, *, during: Refusal, session_id: str | None = None) -> dict[str, Any]:
        """The ``budget.refused`` event's detail, the same for every refusal: the budget, what was used of
        it, when it resets, and ``during``: ``start`` (a new turn refused) or ``turn`` (a running turn
        stopped between its model calls, in the session ``session_id``)."""
        b = self.budget
        return {"budgetId": b.id, "scope": b.scope, "scopeId": b.scope_id, "period": b.period,
                "maxTokens": b.max_tokens, "maxCost": b.max_cost, "usedTokens": self.used_tokens,
                "usedCost": self.used_cost, "resetsAt": self.resets_at.isoformat(), "during": during,
                "sessionId": session_id}

    def read(self) -> BudgetStanding:
        b = self.budget
        return BudgetStanding(
            id=b.id, scope=b.scope, period=b.period, max_tokens=b.max_tokens, max_cost=b.max_cost,
            used_tokens=self.used_tokens, used_cost=self.used_cost,
            left_tokens=None if b.max_tokens is None else max(0, b.max_tokens - self.used_tokens),
            left_cost=None if b.max_cost is None else max(0.0, b.max_cost - self.used_cost),
            resets_at=self.resets_at,
        )


class BudgetExceeded(TooMany):
    """A turn refused (or stopped) because a budget that applies to the user is used up. Its ``budget``
    field problem carries the values pages word it with: ``variant`` (``day_tokens``, ``month_cost``, …:
    which limit of which period), ``limit`` and ``resetsAt``."""

    code = "budget_exceeded"

    def __init__(self, standing: Standing) -> None:
        b = standing.budget
        kind = "tokens" if standing.tokens_over() else "cost"
        limit: int | float = (b.max_tokens or 0) if kind == "tokens" else (b.max_cost or 0.0)
        shown = f"{limit:,} tokens" if kind == "tokens" else f"${limit:g}"
        when = standing.resets_at.strftime("%Y-%m-%d %H:%M UTC")
        words = f"{_scope_words(b)} {b.period} budget of {shown} is used up until {when}"
        retry = max(1, math.ceil((standing.resets_at - utcnow()).total_seconds()))
        super().__init__(
            f"{words}; a new turn can start once it resets",
            fields={"budget": problem("budget_exceeded", words, variant=f"{b.period}_{kind}", limit=limit,
                                      resetsAt=when)},
            headers={"Retry-After": str(retry)},
        )
        self.standing = standing


def _scope_words(b: Budget) -> str:
    return {"user": "your", "group": "your group's", "everyone": "everyone's"}[b.scope]


def refused(*, user_id: int, standing: Standing) -> BudgetExceeded:
    """The error for a refusal, and the one place each refusal passes through (the log; its audit event is
    the chat engine's to write, as it alone knows the transaction: see the module's doc)."""
    log.info("budget %s refused a turn of user %s", standing.budget.id, user_id)
    return BudgetExceeded(standing)


# --- who is limited ----------------------------------------------------------------------------------


async def _all_budgets(db: AsyncSession) -> list[Budget]:
    return list((await db.execute(select(Budget).order_by(Budget.id))).scalars())


async def _cached_budgets(db: AsyncSession) -> list[Budget]:
    """Every budget, detached from ``db`` for the read cache: the session that reads them may be the turn's
    that a refusal rolls back, and a rollback expires the objects still in it, which the next turn would
    then find in the cache without their columns."""
    found = await _all_budgets(db)
    for b in found:
        db.expunge(b)
    return found


async def applying(rt: Runtime, db: AsyncSession, *, user_id: int) -> list[Budget]:
    """The budgets that limit ``user_id`` (through the read cache: budgets change when an admin edits them).
    The user's groups are read only when a group budget exists, as they are now (a budget follows its
    group's members, not those it had when the usage was recorded)."""
    budgets = await rt.db.cache.load("budgets", "all", lambda: _cached_budgets(db))
    groups: frozenset[int] = frozenset()
    if any(b.scope == "group" for b in budgets):
        groups = await groups_service.user_group_ids(db=db, user_id=user_id)
    return [b for b in budgets if b.scope == "everyone" or (b.scope == "user" and b.scope_id == user_id)
            or (b.scope == "group" and b.scope_id in groups)]


async def standings(rt: Runtime, db: AsyncSession, *, user_id: int) -> list[Standing]:
    """Each budget that applies to the user with what they used of it this period (one indexed sum)."""
    budgets = await applying(rt, db, user_id=user_id)
    if not budgets:
        return []
    today = utcnow().date()
    periods: set[Period] = {b.period for b in budgets}
    used = await _used(db, user_id=user_id, today=today, since=min(period_start(p, today) for p in periods))
    return [Standing(budget=b, used_tokens=used[b.period][0], used_cost=used[b.period][1],
                     resets_at=resets_at(b.period, today)) for b in budgets]


def _used_statement() -> Select[int, float, int, float]:
    """The user's tokens and cost since ``since`` (the earliest period start) and since ``today``, from
    their days' sums (the primary key's range: at most 31 rows)."""
    is_today = UsageDay.day >= bindparam("today")
    return (select(func.coalesce(func.sum(UsageDay.tokens), 0), func.coalesce(func.sum(UsageDay.cost), 0.0),
                   func.coalesce(func.sum(case((is_today, UsageDay.tokens), else_=0)), 0),
                   func.coalesce(func.sum(case((is_today, UsageDay.cost), else_=0.0)), 0.0))
            .where(UsageDay.user_id == bindparam("user_id"), UsageDay.day >= bindparam("since")))


# Built once, its values bound at each run: a statement of ten SQL functions costs more to build and to
# key for the compiled cache (memoised on the statement object) than the sum costs to run: 1.41 -> 0.72 ms
# of CPU per check on SQLite, 1.04 -> 0.38 on PostgreSQL (``bench/usage_statements.py``). Run on the
# session's connection, as the record is, without the ORM's execution layer (it reads no object).
_USED = _used_statement()


async def _used(db: AsyncSession, *, user_id: int, today: date, since: date) -> dict[Period, tuple[int, float]]:
    """The user's tokens and cost today and since ``since`` (the earliest period start), in one statement
    in ``db``'s transaction (the one that saves the turn's user message: no transaction of its own).

    On SQLite it runs on the event loop (``inline_reads``), not on the connection's thread: it is the
    transaction's first statement, before the write that would put the rest in place (``db_sqlite``), and
    at most 31 rows of the primary key's range. On the thread, its execute and its fetch were two hand-offs
    between threads, each waiting for the loop's next turn (``bench/usage_statements.py`` and
    ``bench/turn_cost.py --scenarios usage`` time both: "thread")."""
    connection = await db.connection()
    with inline_reads():
        row = (await connection.execute(_USED, {"user_id": user_id, "today": today, "since": since})).one()
    return {"month": (int(row[0]), float(row[1])), "day": (int(row[2]), float(row[3]))}


@dataclass(frozen=True, slots=True)
class Allowance:
    """What the user had left when their turn started, for the checks between its model calls."""

    user_id: int
    standings: list[Standing]
    model: ModelConfig

    def check(self, run: Tokens) -> None:
        """Raise ``BudgetExceeded`` when what the run used so far uses up a budget."""
        cost = cost_of(model=self.model, tokens=run) or 0.0
        for s in self.standings:
            if s.over(run.total, cost):
                now = Standing(budget=s.budget, used_tokens=s.used_tokens + run.total, used_cost=s.used_cost + cost,
                               resets_at=s.resets_at)
                raise refused(user_id=self.user_id, standing=now)


def can_run_out(standing: Standing, model: ModelConfig) -> bool:
    """Whether a turn on ``model`` can use up the budget: a token limit always can; a cost limit only when
    the model has both prices (an unpriced run costs nothing, as in the records)."""
    b = standing.budget
    return b.max_tokens is not None or (b.max_cost is not None and cost_of(model=model, tokens=Tokens()) is not None)


def _allowance(user_id: int, found: list[Standing], model: ModelConfig) -> Allowance | None:
    """The checks a turn's model calls need: the budgets the turn can use up, and any already used up (a
    resumed turn is refused by its first call); None when there are none, so the turn runs on the model
    itself, without the wrapper (``chat.budgeted``)."""
    kept = [s for s in found if s.over() or can_run_out(s, model)]
    return Allowance(user_id=user_id, standings=kept, model=model) if kept else None


async def allowance(rt: Runtime, db: AsyncSession, *, user_id: int, model: ModelConfig) -> Allowance | None:
    """What the user has left, refusing nothing (None: no budget applies that a turn can use up)."""
    return _allowance(user_id, await standings(rt, db, user_id=user_id), model)


async def refuse_over(rt: Runtime, db: AsyncSession, *, user_id: int, model: ModelConfig) -> Allowance | None:
    """Before a turn: ``BudgetExceeded`` when a budget of the user's is used up; else what is left (None:
    no budget applies that the turn can use up, and its model calls need no check)."""
    found = await standings(rt, db, user_id=user_id)
    for s in found:
        if s.over():
            raise refused(user_id=user_id, standing=s)
    return _allowance(user_id, found, model)


# --- admin -------------------------------------------------------------------------------------------


def _check(data: BudgetCreate) -> None:
    if data.max_tokens is None and data.max_cost is None:
        raise invalid_field("maxTokens", "budget_needs_limit", "set maxTokens, maxCost or both")
    if data.scope == "everyone" and data.scope_id is not None:
        raise invalid_field("scopeId", "no_scope_for_everyone", "a budget for everyone names no user or group")
    if data.scope != "everyone" and data.scope_id is None:
        raise invalid_field("scopeId", "missing", f"name the {data.scope} this budget is for")


async def _check_user(db: AsyncSession, data: BudgetCreate) -> None:
    """The user or group the budget names exists."""
    if data.scope == "user" and await db.get(User, data.scope_id) is None:
        raise invalid_field("scopeId", "no_such_user", "no such user")
    if data.scope == "group" and await db.get(Group, data.scope_id) is None:
        raise invalid_field("scopeId", "no_such_group", "no such group")


async def create_budget(*, db: AsyncSession, data: BudgetCreate) -> Budget:
    _check(data)
    await _check_user(db, data)
    row = Budget(scope=data.scope, scope_id=data.scope_id, period=data.period, max_tokens=data.max_tokens,
                 max_cost=data.max_cost)
    db.add(row)
    await db.flush()
    return row


async def get_budget(*, db: AsyncSession, budget_id: int) -> Budget:
    return await one_or_404(db, select(Budget).where(Budget.id == budget_id),
                            NotFound("budget not found", code="budget_not_found"))


async def list_budgets(*, db: AsyncSession) -> list[Budget]:
    return await _all_budgets(db)


async def replace_budget(*, db: AsyncSession, budget_id: int, data: BudgetCreate) -> Budget:
    row = await get_budget(db=db, budget_id=budget_id)
    _check(data)
    await _check_user(db, data)
    row.scope, row.scope_id, row.period = data.scope, data.scope_id, data.period
    row.max_tokens, row.max_cost = data.max_tokens, data.max_cost
    await db.flush()
    return row


async def delete_budget(*, db: AsyncSession, budget_id: int) -> None:
    await db.delete(await get_budget(db=db, budget_id=budget_id))
    await db.flush()

