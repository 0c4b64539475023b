"""Identity providers, accounts linked to them, and users' email and provider (``auth_providers``,
``user_identities``, ``users.email``, ``users.auth_provider``)

Revision ID: 0032_identity
Revises: 0031_usage

``users.auth_provider`` is the slug of the provider that created the account (NULL: a local account);
renaming a provider's slug rewrites it. Accounts a provider created get a password hash no password
matches, so only that provider signs them in.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0032_identity"
down_revision = "0031_usage"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "auth_providers",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("slug", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("secret_enc", sa.Text(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_auth_providers")),
        sa.UniqueConstraint("slug", name=op.f("uq_auth_providers_slug")),
    )
    op.create_table(
        "user_identities",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("provider_id", sa.Integer(), nullable=False),
        sa.Column("subject", sa.String(length=512), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_user_identities_user_id_users"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["provider_id"], ["auth_providers.id"],
                                name=op.f("fk_user_identities_provider_id_auth_providers"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_identities")),
        sa.UniqueConstraint("provider_id", "subject", name=op.f("uq_user_identities_provider_id")),
    )
    op.create_index(op.f("ix_user_identities_user_id"), "user_identities", ["user_id"])
    op.create_index(op.f("ix_user_identities_provider_id"), "user_identities", ["provider_id"])
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("email", sa.String(length=320), nullable=True))
        batch.add_column(sa.Column("auth_provider", sa.String(length=64), nullable=True))


def downgrade() -> None:
    # in place (SQLite 3.35+): a batch copy of users would drop the table that other tables' triggers and
    # foreign keys name, which SQLite refuses while they are in use
    op.drop_column("users", "auth_provider")
    op.drop_column("users", "email")
    op.drop_index(op.f("ix_user_identities_provider_id"), table_name="user_identities")
    op.drop_index(op.f("ix_user_identities_user_id"), table_name="user_identities")
    op.drop_table("user_identities")
    op.drop_table("auth_providers")
