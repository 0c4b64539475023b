"""Usage per person, budgets, and model prices

Revision ID: 0031_usage
Revises: 0030_session_knowledge

``usage_records`` holds one row per model run with who caused it and what it cost (``usage.service``);
``usage_budgets`` the limits admins set (``usage.budgets``). ``model_configs`` gains the prices an admin
sets per million input and output tokens (null: unknown, and the cost of its runs is null too).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0031_usage"
down_revision = "0030_session_knowledge"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("model_configs", sa.Column("input_price_per_mtok", sa.Float(), nullable=True))
    op.add_column("model_configs", sa.Column("output_price_per_mtok", sa.Float(), nullable=True))
    op.create_table(
        "usage_records",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("model_id", sa.Integer(), nullable=True),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("source", sa.String(length=16), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_read_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_write_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cost", sa.Float(), nullable=True),
        sa.Column("day", sa.Date(), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_usage_records_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_records")),
    )
    op.create_index("ix_usage_records_user_day", "usage_records", ["user_id", "day"])
    op.create_index("ix_usage_records_day", "usage_records", ["day"])
    op.create_table(
        "usage_budgets",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("scope_id", sa.Integer(), nullable=True),
        sa.Column("period", sa.String(length=8), nullable=False),
        sa.Column("max_tokens", sa.BigInteger(), nullable=True),
        sa.Column("max_cost", sa.Float(), nullable=True),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_usage_budgets")),
    )


def downgrade() -> None:
    op.drop_table("usage_budgets")
    op.drop_index("ix_usage_records_day", table_name="usage_records")
    op.drop_index("ix_usage_records_user_day", table_name="usage_records")
    op.drop_table("usage_records")
    with op.batch_alter_table("model_configs") as batch:
        batch.drop_column("output_price_per_mtok")
        batch.drop_column("input_price_per_mtok")
