"""a2a: message source fields, a2a_task_sessions

Revision ID: 0005_a2a
Revises: 0004_documents
"""

from __future__ import annotations

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

import agentloft.db  # noqa: F401

revision = "0005_a2a"
down_revision = "0004_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
