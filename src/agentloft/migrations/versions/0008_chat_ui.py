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


def upgrade() -> None:
    # On a reply: how many messages the session's model history had once its turn was saved. Editing or
    # regenerating from a later message cuts the history back to exactly that point.
    with op.batch_alter_table("agent_messages") as batch:
        batch.add_column(sa.Column("history_length", sa.Integer(), nullable=True))
    # 'auto' (the first words; a generated title may replace it), 'generated' or 'user' (renamed).
    with op.batch_alter_table("agent_sessions") as batch:
        batch.add_column(sa.Column("title_source", sa.String(length=10), nullable=False, server_default="auto"))


def downgrade() -> None:
    with op.batch_alter_table("agent_sessions") as batch:
        batch.drop_column("title_source")
    with op.batch_alter_table("agent_messages") as batch:
        batch.drop_column("history_length")
