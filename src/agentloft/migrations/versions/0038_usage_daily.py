"""Each user's usage per UTC day (``usage_daily``), kept by the database as records are written

Revision ID: 0038_usage_daily
Revises: 0037_tool_approvers

The budget check summed the user's ``usage_records`` of the period before every turn: on SQLite the sum's
work grows with the records (0.76 ms of a turn's CPU at 300 records this month, 2.31 ms at 3,000;
docs/benchmarks.md). ``usage_daily`` holds one row per user and day, the day's tokens (input + output)
and cost, so the check sums at most 31 rows whatever the user did.

A row trigger on ``usage_records`` adds each new record to its day's row (an upsert), in the INSERT's own
statement and transaction: the turn pays no statement and no round trip more (the record is the one
INSERT it was), every path that records usage (turns, titles, knowledge) keeps the rollup right without
knowing of it, and a rolled-back record never counted. On PostgreSQL two transactions adding to the same
user's day take that row's lock in turn (the second waits for the first's commit), so the sums stay exact
on several workers. Records are never updated or deleted one by one (a deleted user's rows go with the
user, by the foreign key on both tables), so the trigger handles INSERT only.

The upgrade fills ``usage_daily`` from the records already kept.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0038_usage_daily"
down_revision = "0037_tool_approvers"
branch_labels = None
depends_on = None

TRIGGER = "usage_records_add_to_day"
# What one record adds to its day: what a budget counts (a record without a known price adds no cost).
ADD = ("INSERT INTO usage_daily (user_id, day, tokens, cost) "
       "VALUES (new.user_id, new.day, new.input_tokens + new.output_tokens, coalesce(new.cost, 0.0)) "
       "ON CONFLICT (user_id, day) DO UPDATE SET tokens = usage_daily.tokens + excluded.tokens, "
       "cost = usage_daily.cost + excluded.cost;")

SQLITE_TRIGGER = f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON usage_records BEGIN {ADD} END"

PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION agentloft_usage_add_to_day() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  {ADD}
  RETURN NULL;
END
$$
"""
PG_TRIGGER = (f"CREATE TRIGGER {TRIGGER} AFTER INSERT ON usage_records FOR EACH ROW "
              "EXECUTE FUNCTION agentloft_usage_add_to_day()")

BACKFILL = ("INSERT INTO usage_daily (user_id, day, tokens, cost) "
            "SELECT user_id, day, sum(input_tokens + output_tokens), coalesce(sum(cost), 0.0) "
            "FROM usage_records GROUP BY user_id, day")


def upgrade() -> None:
    op.create_table(
        "usage_daily",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_usage_daily_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", "day", name=op.f("pk_usage_daily")),
    )
    # the trigger first, then the records so far, in the migration's one transaction
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute(PG_TRIGGER)
    else:
        op.execute(SQLITE_TRIGGER)
    op.execute(BACKFILL)


def downgrade() -> None:
    """Back to budgets summing the records (the code of revision 0037)."""
    postgresql = op.get_bind().dialect.name == "postgresql"
    op.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}" + (" ON usage_records" if postgresql else ""))
    if postgresql:
        op.execute("DROP FUNCTION IF EXISTS agentloft_usage_add_to_day()")
    op.drop_table("usage_daily")
