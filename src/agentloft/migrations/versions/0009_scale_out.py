"""scale-out: worker_processes, a2a_task_sessions.task_version

Revision ID: 0009_scale_out
Revises: 0008_chat_ui
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0009_scale_out"
down_revision = "0008_chat_ui"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # One row per running server process, renewed by its heartbeat: how a second process on the same
    # database without a shared Redis is noticed and refused (system/workers.py).
    op.create_table(
        "worker_processes",
        sa.Column("id", sa.String(length=100), nullable=False),
        sa.Column("host", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("started_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_worker_processes")),
    )
    # The version of the stored A2A Task, compared and bumped on every save, so two workers writing one
    # task (a cancel on one while another runs it) never overwrite each other unseen.
    with op.batch_alter_table("a2a_task_sessions") as batch:
        batch.add_column(sa.Column("task_version", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("a2a_task_sessions") as batch:
        batch.drop_column("task_version")
    op.drop_table("worker_processes")
