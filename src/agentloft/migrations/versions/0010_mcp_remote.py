"""mcp servers, remote agents

Revision ID: 0010_mcp_remote
Revises: 0006_default_prompt
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0010_mcp_remote"
down_revision = "0006_default_prompt"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "mcp_servers",
        sa.Column("id", sa.String(length=40), nullable=False),
        sa.Column("slug", sa.String(length=40), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("transport", sa.String(length=10), nullable=False),
        sa.Column("url", sa.Text(), nullable=True),
        sa.Column("command", sa.Text(), nullable=True),
        sa.Column("args", sa.JSON(), nullable=False),
        sa.Column("headers_enc", sa.Text(), nullable=True),
        sa.Column("env_enc", sa.Text(), nullable=True),
        sa.Column("secret_enc", sa.Text(), nullable=True),
        sa.Column("header_names", sa.JSON(), nullable=False),
        sa.Column("env_names", sa.JSON(), nullable=False),
        sa.Column("network", sa.Boolean(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("server_info", sa.JSON(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("refreshed_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_mcp_servers")),
        sa.UniqueConstraint("slug", name=op.f("uq_mcp_servers_slug")),
    )
    # Remote agents (A2A). Batch mode rebuilds the table on SQLite.
    with op.batch_alter_table("agents") as batch:
        batch.add_column(sa.Column("kind", sa.String(length=10), nullable=False, server_default="local"))
        batch.add_column(sa.Column("card_url", sa.Text(), nullable=True))
        batch.add_column(sa.Column("remote_token_enc", sa.Text(), nullable=True))
        batch.add_column(sa.Column("card", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("card_fetched_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("card_error", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("card_error")
        batch.drop_column("card_fetched_at")
        batch.drop_column("card")
        batch.drop_column("remote_token_enc")
        batch.drop_column("card_url")
        batch.drop_column("kind")
    op.drop_table("mcp_servers")
