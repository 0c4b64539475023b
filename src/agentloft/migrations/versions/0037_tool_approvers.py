"""Approvers of a tool (``tool_approver_groups``), and who answered each paused call

Revision ID: 0037_tool_approvers
Revises: 0036_hidden_sessions

A tool with approver groups has its paused calls answered by members of those groups instead of the
requester (``chat.approvals``). ``chat_approvals.tool_id`` names the tool a paused call belongs to (no
foreign key: a session's own knowledge tool is no row, and a deleted tool leaves the call to its
requester, as a tool without approvers does); ``answered_by`` is the user who answered it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0037_tool_approvers"
down_revision = "0036_hidden_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "tool_approver_groups",
        sa.Column("tool_id", sa.String(length=40), nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(["tool_id"], ["agent_tools.id"], name=op.f("fk_tool_approver_groups_tool_id_agent_tools"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"], name=op.f("fk_tool_approver_groups_group_id_groups"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("tool_id", "group_id", name=op.f("pk_tool_approver_groups")),
    )
    op.create_index("idx_tool_approver_groups_group", "tool_approver_groups", ["group_id"])
    op.add_column("chat_approvals", sa.Column("tool_id", sa.String(length=200), nullable=True))
    op.add_column("chat_approvals", sa.Column("answered_by", sa.Integer(), nullable=True))


def downgrade() -> None:
    # in place (SQLite 3.35+), as 0032 does: neither column is in a key or an index
    op.drop_column("chat_approvals", "answered_by")
    op.drop_column("chat_approvals", "tool_id")
    op.drop_index("idx_tool_approver_groups_group", table_name="tool_approver_groups")
    op.drop_table("tool_approver_groups")
