"""chat ui: how long the model history was after each reply, where a session's title came from

Revision ID: 0008_chat_ui
Revises: 0007_cjk_search
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_chat_ui"
down_revision = "0007_cjk_search"
branch_labels = None
depends_on = None


# Plain ALTER TABLE, never a batch copy: on SQLite a batch recreates the table and renames it into place,
# which 0007's search triggers (they name agent_sessions and agent_messages) refuse. SQLite has had ADD
# and DROP COLUMN since 3.35.


def upgrade() -> None:
    # On a reply: how many messages the session's model history had once its turn was saved. Editing or
    # regenerating from a later message cuts the history back to exactly that point.
    op.add_column("agent_messages", sa.Column("history_length", sa.Integer(), nullable=True))
    # 'auto' (the first words; a generated title may replace it), 'generated' or 'user' (renamed).
    op.add_column("agent_sessions",
                  sa.Column("title_source", sa.String(length=10), nullable=False, server_default="auto"))


def downgrade() -> None:
    op.drop_column("agent_sessions", "title_source")
    op.drop_column("agent_messages", "history_length")
