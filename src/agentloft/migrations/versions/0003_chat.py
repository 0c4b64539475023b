"""chat engine: agent_sessions, agent_messages, pending runs

Revision ID: 0003_chat
Revises: 0002_tools
"""

from __future__ import annotations

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

import agentloft.db  # noqa: F401

revision = "0003_chat"
down_revision = "0002_tools"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
