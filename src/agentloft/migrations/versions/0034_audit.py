"""The audit trail (``audit_events``), its chain head (``audit_chain``), and tools' ``audit_arguments``

Revision ID: 0034_audit
Revises: 0033_resource_groups

Events are hash-chained: each row holds the hash of the one before (``audit.chain``). The head row is
created here, so appending never has to create it (two first appenders would race to).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0034_audit"
down_revision = "0033_resource_groups"
branch_labels = None
depends_on = None

BIG = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
GENESIS = "0" * 64


def upgrade() -> None:
    op.create_table(
        "audit_events",
        sa.Column("id", BIG, autoincrement=False, nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("type", sa.String(length=40), nullable=False),
        sa.Column("actor_id", sa.Integer(), nullable=True),
        sa.Column("actor_name", sa.String(length=200), nullable=True),
        sa.Column("ip", sa.String(length=64), nullable=True),
        sa.Column("target", sa.String(length=300), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index("ix_audit_events_type_id", "audit_events", ["type", "id"])
    op.create_index("ix_audit_events_actor_id_id", "audit_events", ["actor_id", "id"])
    op.create_index("ix_audit_events_at", "audit_events", ["at"])
    chain = op.create_table(
        "audit_chain",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("last_id", BIG, nullable=False),
        sa.Column("last_hash", sa.String(length=64), nullable=False),
        sa.Column("start_id", BIG, nullable=False),
        sa.Column("start_hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_chain")),
    )
    op.bulk_insert(chain, [{"id": 1, "last_id": 0, "last_hash": GENESIS, "start_id": 1, "start_hash": GENESIS}])
    op.add_column("agent_tools", sa.Column("audit_arguments", sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    op.drop_column("agent_tools", "audit_arguments")  # in place (SQLite 3.35+), no copy of the table
    op.drop_table("audit_chain")
    op.drop_index("ix_audit_events_at", table_name="audit_events")
    op.drop_index("ix_audit_events_actor_id_id", table_name="audit_events")
    op.drop_index("ix_audit_events_type_id", table_name="audit_events")
    op.drop_table("audit_events")
