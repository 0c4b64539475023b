"""Uploaded files (``files``)

Revision ID: 0020_files
Revises: 0019_running_sessions

One row per file a user uploaded; its bytes and the text read from it live in the file store (the data
dir or an S3 bucket), not here. Deleting a user deletes their rows.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0020_files"
down_revision = "0019_running_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "files",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("media_type", sa.String(length=127), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", agentloft.core.db.StorableText(), nullable=True),
        sa.Column("chars", sa.Integer(), nullable=True),
        sa.Column("pages", sa.Integer(), nullable=True),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_files_user_id_users"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_files")),
    )
    op.create_index("idx_files_user_created", "files", ["user_id", "created_at"])


def downgrade() -> None:
    op.drop_index("idx_files_user_created", table_name="files")
    op.drop_table("files")
