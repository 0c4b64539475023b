"""Groups of users (``groups``, ``group_members``)

Revision ID: 0029_groups
Revises: 0028_grams_schema

A group is made by an admin (``source = 'local'``) or synced from a sign-in provider (``source`` = its
slug); its name is unique within its source. Memberships go with their group or user by cascade.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0029_groups"
down_revision = "0028_grams_schema"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "groups",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_groups")),
        sa.UniqueConstraint("source", "name", name="uq_groups_source_name"),
    )
    op.create_table(
        "group_members",
        sa.Column("group_id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"], name=op.f("fk_group_members_group_id_groups"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_group_members_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("group_id", "user_id", name=op.f("pk_group_members")),
    )
    op.create_index("idx_group_members_user", "group_members", ["user_id"])


def downgrade() -> None:
    op.drop_index("idx_group_members_user", table_name="group_members")
    op.drop_table("group_members")
    op.drop_table("groups")
