"""a2a: message source fields, a2a_task_sessions

Revision ID: 0005_a2a
Revises: 0004_documents
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0005_a2a"
down_revision = "0004_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Where a message came from (seed 003, 3.1.1). Batch mode rebuilds the table on SQLite.
    with op.batch_alter_table("agent_messages") as batch:
        batch.add_column(sa.Column("source", sa.String(length=10), nullable=False, server_default="user"))
        batch.add_column(sa.Column("a2a_task_id", sa.String(length=64), nullable=True))
        batch.add_column(sa.Column("caller_agent_id", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("caller_session_id", sa.Text(), nullable=True))
        batch.create_foreign_key(
            "fk_agent_messages_caller_agent_id_agents", "agents", ["caller_agent_id"], ["id"],
            ondelete="SET NULL",
        )
        batch.create_index("idx_agent_messages_source", ["source"])
        batch.create_index("ix_agent_messages_a2a_task_id", ["a2a_task_id"])
    op.create_table(
        "a2a_task_sessions",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("session_id", sa.String(length=40), nullable=True),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("caller_agent_id", sa.Integer(), nullable=True),
        sa.Column("caller_session_id", sa.Text(), nullable=True),
        sa.Column("caller_context", sa.JSON(), nullable=True),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("visible_in_sidebar", sa.Integer(), nullable=False, server_default="0"),
        sa.Column("task_data", sa.JSON(), nullable=True),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["session_id"], ["agent_sessions.id"],
                                name=op.f("fk_a2a_task_sessions_session_id_agent_sessions"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["agent_id"], ["agents.id"], name=op.f("fk_a2a_task_sessions_agent_id_agents"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["caller_agent_id"], ["agents.id"],
                                name=op.f("fk_a2a_task_sessions_caller_agent_id_agents"), ondelete="SET NULL"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_a2a_task_sessions_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_a2a_task_sessions")),
    )
    op.create_index(op.f("ix_a2a_task_sessions_session_id"), "a2a_task_sessions", ["session_id"])
    op.create_index(op.f("ix_a2a_task_sessions_agent_id"), "a2a_task_sessions", ["agent_id"])
    op.create_index(op.f("ix_a2a_task_sessions_user_id"), "a2a_task_sessions", ["user_id"])


def downgrade() -> None:
    op.drop_table("a2a_task_sessions")
    with op.batch_alter_table("agent_messages") as batch:
        batch.drop_index("ix_agent_messages_a2a_task_id")
        batch.drop_index("idx_agent_messages_source")
        batch.drop_constraint("fk_agent_messages_caller_agent_id_agents", type_="foreignkey")
        batch.drop_column("caller_session_id")
        batch.drop_column("caller_agent_id")
        batch.drop_column("a2a_task_id")
        batch.drop_column("source")
