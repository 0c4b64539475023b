"""The usage tables: one row per model run (``UsageRecord``), its sums per user and day (``UsageDay``) and
the budgets admins set (``Budget``)."""

from __future__ import annotations

from datetime import date, datetime
from typing import Literal

from sqlalchemy import BigInteger, Date, Float, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime, utcnow

Source = Literal["chat", "a2a", "title", "knowledge", "api"]
Scope = Literal["user", "group", "everyone"]
Period = Literal["day", "month"]


class UsageRecord(Base):
    """What one run of a model cost, and who caused it (``usage.service`` says which run is one row).

    ``agent_id`` and ``model_id`` are kept without foreign keys: the record outlives a deleted agent or
    model (the reports then show its id). ``day`` is the UTC day of ``created_at``, kept as a column so
    the reports and budgets group and filter by an index instead of a function of the timestamp."""

    __tablename__ = "usage_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    agent_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    model_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    source: Mapped[Source] = mapped_column(String(16), nullable=False)
    input_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    cache_read_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    cache_write_tokens: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)
    # USD; null when the model's prices are unknown
    cost: Mapped[float | None] = mapped_column(Float, nullable=True)
    day: Mapped[date] = mapped_column(Date, nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)

    # A user's usage in a period (their reports, every budget check) and everyone's by day (admin reports).
    __table_args__ = (
        Index("ix_usage_records_user_day", "user_id", "day"),
        Index("ix_usage_records_day", "day"),
    )


class UsageDay(Base):
    """One user's tokens (input + output) and cost of one UTC day: the sum of their records of that day,
    which the budget check reads instead of the records (at most 31 rows a month, however many turns).

    Kept by the database, never by this code: a trigger on ``usage_records`` adds each record to its day
    in the record's own INSERT (migration 0038 says why). Unknown costs add nothing, as in a budget."""

    __tablename__ = "usage_daily"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    day: Mapped[date] = mapped_column(Date, primary_key=True)
    tokens: Mapped[int] = mapped_column(BigInteger, nullable=False)
    cost: Mapped[float] = mapped_column(Float, nullable=False)


class Budget(TimestampMixin, Base):
    """A limit on what each person it applies to may use per period (``usage.budgets``)."""

    __tablename__ = "usage_budgets"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    scope: Mapped[Scope] = mapped_column(String(16), nullable=False)
    scope_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    period: Mapped[Period] = mapped_column(String(8), nullable=False)
    max_tokens: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    max_cost: Mapped[float | None] = mapped_column(Float, nullable=True)
