"""tool system: agent_tools, agent_tool_associations

Revision ID: 0002_tools
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0002_tools"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "agent_tools",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("secrets_enc", sa.JSON(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("needs_approval", sa.Boolean(), nullable=False),
        sa.Column("admin_only", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_tools")),
        sa.UniqueConstraint("slug", name=op.f("uq_agent_tools_slug")),
    )
    op.create_table(
        "agent_tool_associations",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=False),
        sa.Column("tool_id", sa.String(length=40), nullable=False),
        sa.Column("needs_approval", sa.Boolean(), nullable=True),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"],
            name=op.f("fk_agent_tool_associations_agent_id_agents"), ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["tool_id"], ["agent_tools.id"],
            name=op.f("fk_agent_tool_associations_tool_id_agent_tools"), ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_tool_associations")),
        sa.UniqueConstraint("agent_id", "tool_id", name=op.f("uq_agent_tool_associations_agent_id")),
    )
    with op.batch_alter_table("agent_tool_associations", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_agent_tool_associations_tool_id"), ["tool_id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("agent_tool_associations", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_agent_tool_associations_tool_id"))
    op.drop_table("agent_tool_associations")
    op.drop_table("agent_tools")
