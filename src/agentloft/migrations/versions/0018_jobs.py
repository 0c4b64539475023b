"""Background jobs (``jobs``)

Revision ID: 0018_jobs
Revises: 0017_starter_prompts

A queue in the database (``core.jobs``): reading an uploaded document, indexing a file for knowledge. Every
server process claims due jobs with a lease; the index serves its "what is due" query.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0018_jobs"
down_revision = "0017_starter_prompts"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.JSON(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("lease_owner", sa.String(length=100), nullable=True),
        sa.Column("lease_until", agentloft.core.db.UTCDateTime(timezone=True), nullable=True),
        sa.Column("run_after", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_jobs")),
    )
    op.create_index("idx_jobs_status_run_after", "jobs", ["status", "run_after"])


def downgrade() -> None:
    op.drop_index("idx_jobs_status_run_after", table_name="jobs")
    op.drop_table("jobs")
