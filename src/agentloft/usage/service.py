"""Recording what each model run used, and the reports of it.

**What one record is.** One row per run of a model: a chat turn (a reply resumed after its approvals is a
run of its own, so it is a row of its own), an A2A task's turn, a generated title, one embedding request of
knowledge. A turn's row is added in the transaction that saves the turn's reply (``chat.engine``), so
recording costs one INSERT in a transaction the turn opens anyway, never a write per chunk or per step; the
budgets stop a turn between its model calls from what the run counted so far (``usage.budgets``), which
needs no row per call.

**Who caused it.** The user whose request ran the model: the chat's user; for an A2A task started by one
of our agents (agent-invoke), the user whose turn called it (the task runs as that user); for an A2A task
from an outside client, the user its credentials name; for a title, the session's owner; for knowledge,
the collection's owner when its chunks are embedded, the searching user when a query is.

**Cost** is input tokens at the model's input price plus output tokens at its output price (USD per
million tokens, as an admin set them on the model); a model without both prices gives a null cost, and the
reports sum the costs that are known. Cached input tokens are part of the input tokens (as providers count
them) and priced as input; their counts are kept apart for the reports to come.

**Days** are UTC days: ``day`` is stored with each row so that reports and budgets filter on an index.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date
from typing import Any, Literal

from sqlalchemy import ColumnElement, Select, case, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents.models import Agent
from agentloft.auth.models import User
from agentloft.core.db import utcnow
from agentloft.groups.models import Group, GroupMember
from agentloft.llm.models import ModelConfig
from agentloft.usage.models import Source, UsageRecord
from agentloft.usage.schemas import UsageItem, UsageReport, UsageTotal

GroupBy = Literal["day", "agent", "model", "user", "group"]
# The sources whose records are turns (``turns`` in the reports): a title or an embedding is not one.
TURN_SOURCES = ("chat", "a2a", "api")


@dataclass(frozen=True, slots=True)
class Tokens:
    """What a run used, as the provider counted it."""

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0

    @property
    def total(self) -> int:
        """What a budget counts: input plus output tokens."""
        return self.input + self.output

    def __bool__(self) -> bool:
        return bool(self.input or self.output)


def tokens_of(usage: Any) -> Tokens:
    """A pydantic-ai ``RunUsage`` or ``RequestUsage`` as ``Tokens`` (missing counts are 0)."""
    return Tokens(input=usage.input_tokens or 0, output=usage.output_tokens or 0,
                  cache_read=usage.cache_read_tokens or 0, cache_write=usage.cache_write_tokens or 0)


def cost_of(*, model: ModelConfig | None, tokens: Tokens) -> float | None:
    """USD for ``tokens`` at ``model``'s prices; None when either price is unknown."""
    if model is None or model.input_price_per_mtok is None or model.output_price_per_mtok is None:
        return None
    return (tokens.input * model.input_price_per_mtok + tokens.output * model.output_price_per_mtok) / 1_000_000


# The record's statement, built once. Run with its values as parameters on the session's connection, it
# costs neither building a VALUES clause and its cache key per call nor the ORM's bulk-insert layer (a
# record is never an ORM object): 0.84 -> 0.40 ms of CPU per record on SQLite, 0.80 -> 0.30 on PostgreSQL
# (``bench/usage_statements.py``).
_INSERT = insert(UsageRecord)


async def record(*, db: AsyncSession, user_id: int, source: Source, tokens: Tokens, model: ModelConfig | None,
                 agent_id: int | None = None, session_id: str | None = None) -> None:
    """Write the record of one run in ``db``'s transaction (kept or dropped with it). A run that used
    nothing (it failed before the model answered) leaves no record. One Core INSERT rather than an ORM
    object: a turn's save pays a statement, not a unit of work's flush (``bench/turn_cost.py``)."""
    if not tokens:
        return
    now = utcnow()
    connection = await db.connection()  # the session's own, in its transaction
    await connection.execute(_INSERT, {
        "user_id": user_id, "agent_id": agent_id, "model_id": model.id if model is not None else None,
        "session_id": session_id, "source": source, "input_tokens": tokens.input, "output_tokens": tokens.output,
        "cache_read_tokens": tokens.cache_read, "cache_write_tokens": tokens.cache_write,
        "cost": cost_of(model=model, tokens=tokens), "day": now.date(), "created_at": now,
    })


# --- reports -----------------------------------------------------------------------------------------


def _key_column(group_by: GroupBy) -> ColumnElement[Any]:
    return {"day": UsageRecord.day, "agent": UsageRecord.agent_id, "model": UsageRecord.model_id,
            "user": UsageRecord.user_id, "group": GroupMember.group_id}[group_by]


def _sums(key: ColumnElement[Any]) -> Select[Any, int, int, float | None, int]:
    turns = func.sum(case((UsageRecord.source.in_(TURN_SOURCES), 1), else_=0))
    return select(key, func.coalesce(func.sum(UsageRecord.input_tokens), 0),
                  func.coalesce(func.sum(UsageRecord.output_tokens), 0), func.sum(UsageRecord.cost),
                  func.coalesce(turns, 0))


async def report(*, db: AsyncSession, start: date, end: date, group_by: GroupBy,
                 user_id: int | None = None) -> UsageReport:
    """Usage from ``start`` to ``end`` (UTC days, both included) grouped by ``group_by``: one user's when
    ``user_id`` is given, everyone's otherwise. Items by the most tokens first, days in order."""
    where = [UsageRecord.day >= start, UsageRecord.day <= end]
    if user_id is not None:
        where.append(UsageRecord.user_id == user_id)
    key = _key_column(group_by)
    stmt = _sums(key)
    if group_by == "group":  # each group's members' usage (a member of two groups counts in both)
        stmt = stmt.select_from(UsageRecord).join(GroupMember, GroupMember.user_id == UsageRecord.user_id)
    rows = (await db.execute(stmt.where(*where).group_by(key))).all()
    labels = await _labels(db, group_by, [r[0] for r in rows if r[0] is not None])
    items = [UsageItem(key=_key_text(r[0]), label=labels.get(r[0]), input_tokens=int(r[1]),
                       output_tokens=int(r[2]), cost=r[3], turns=int(r[4])) for r in rows]
    if group_by == "day":
        items.sort(key=lambda i: i.key or "")
    else:
        items.sort(key=lambda i: (-(i.input_tokens + i.output_tokens), i.key or ""))
    total = sum_items(items)
    return UsageReport(items=items, total=total)


def sum_items(items: list[UsageItem]) -> UsageTotal:
    costs = [i.cost for i in items if i.cost is not None]
    return UsageTotal(input_tokens=sum(i.input_tokens for i in items),
                      output_tokens=sum(i.output_tokens for i in items),
                      cost=sum(costs) if costs else None, turns=sum(i.turns for i in items))


def _key_text(key: Any) -> str | None:
    """Keys as the API gives them: ids and days as text (``"12"``, ``"2026-12-03"``); None for records
    without one (the plain chat has no agent)."""
    if key is None:
        return None
    return key.isoformat() if isinstance(key, date) else str(key)


async def _labels(db: AsyncSession, group_by: GroupBy, keys: list[Any]) -> dict[Any, str]:
    """The names the keys stand for; an agent, model or user deleted since has none (the page shows its id)."""
    if group_by == "day":
        return {k: k.isoformat() for k in keys}
    if not keys:
        return {}
    table: Any = {"agent": Agent, "model": ModelConfig, "user": User, "group": Group}[group_by]
    name = table.username if group_by == "user" else table.name
    rows = (await db.execute(select(table.id, name).where(table.id.in_(keys)))).all()
    return {r[0]: r[1] for r in rows}


CSV_COLUMNS = ("key", "label", "inputTokens", "outputTokens", "cost", "turns")


def report_csv(report: UsageReport) -> str:
    """The report's items as CSV, one line each under a header of the JSON fields' names."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for i in report.items:
        writer.writerow([i.key or "", _csv_safe(i.label or ""), i.input_tokens, i.output_tokens,
                         "" if i.cost is None else f"{i.cost:.12g}", i.turns])
    return out.getvalue()


def _csv_safe(text: str) -> str:
    """A name as a spreadsheet shows it, never as a formula it runs (an agent called ``=HYPERLINK(…)``)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def today() -> date:
    return utcnow().date()
