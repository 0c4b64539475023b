"""documents: agent_documents, versions, full-text index

Revision ID: 0004_documents
Revises: 0003_chat
"""

from __future__ import annotations

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

import agentloft.db  # noqa: F401

revision = "0004_documents"
down_revision = "0003_chat"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
