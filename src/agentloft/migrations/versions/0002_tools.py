"""tool system: agent_tools, agent_tool_associations

Revision ID: 0002_tools
Revises: 0001_core
"""

from __future__ import annotations

import sqlalchemy as sa  # noqa: F401
from alembic import op  # noqa: F401

import agentloft.db  # noqa: F401

revision = "0002_tools"
down_revision = "0001_core"
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
