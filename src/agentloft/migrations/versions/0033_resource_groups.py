"""Resources limited to groups (``resource_groups``)

Revision ID: 0033_resource_groups
Revises: 0032_identity

An agent, a model, a tool or a knowledge collection with no row here is open to everyone; with rows, to
the members of those groups (and admins). One column per kind of resource, exactly one set, each a
foreign key that cascades (``groups.models.ResourceGroup``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0033_resource_groups"
down_revision = "0032_identity"
branch_labels = None
depends_on = None

ONE_RESOURCE = " + ".join(f"CASE WHEN {c} IS NULL THEN 0 ELSE 1 END"
                          for c in ("agent_id", "model_id", "tool_id", "collection_id")) + " = 1"
TARGETS = (("agent_id", sa.Integer(), "agents"), ("model_id", sa.Integer(), "model_configs"),
           ("tool_id", sa.String(length=40), "agent_tools"),
           ("collection_id", sa.String(length=64), "knowledge_collections"))


def upgrade() -> None:
    op.create_table(
        "resource_groups",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("group_id", sa.Integer(), nullable=False),
        *[sa.Column(column, kind, nullable=True) for column, kind, _ in TARGETS],
        sa.CheckConstraint(ONE_RESOURCE, name=op.f("ck_resource_groups_one_resource")),
        sa.ForeignKeyConstraint(["group_id"], ["groups.id"], name=op.f("fk_resource_groups_group_id_groups"),
                                ondelete="CASCADE"),
        *[sa.ForeignKeyConstraint([column], [f"{table}.id"], name=op.f(f"fk_resource_groups_{column}_{table}"),
                                  ondelete="CASCADE") for column, _, table in TARGETS],
        sa.PrimaryKeyConstraint("id", name=op.f("pk_resource_groups")),
        *[sa.UniqueConstraint(column, "group_id", name=f"uq_resource_groups_{column.removesuffix('_id')}")
          for column, _, _ in TARGETS],
    )
    op.create_index("idx_resource_groups_group", "resource_groups", ["group_id"])


def downgrade() -> None:
    op.drop_index("idx_resource_groups_group", table_name="resource_groups")
    op.drop_table("resource_groups")
