"""The user's own knowledge collections a chat session searches (``agent_sessions.knowledge_ids``)

Revision ID: 0030_session_knowledge
Revises: 0029_groups

A JSON list of collection ids on the session (``chat.knowledge``), read back by the claim that starts
each turn, so a turn without collections costs no statement more. A collection deleted later stays in
the list and is dropped wherever the list is read (only the user's existing collections are searched and
shown).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030_session_knowledge"
down_revision = "0029_groups"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agent_sessions", sa.Column("knowledge_ids", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    # in place (SQLite 3.35+): a batch copy of the table would break the search triggers that name it
    op.drop_column("agent_sessions", "knowledge_ids")
