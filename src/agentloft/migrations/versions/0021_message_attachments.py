"""Files attached to user messages (``agent_messages.attachments``)

Revision ID: 0021_message_attachments
Revises: 0020_files

A user message keeps the files sent with it as a JSON list of ``{"id", "name", "mediaType", "size"}``, in
the order they were attached: a column rather than a table, because the list is read and written only
with its message (the session page, a regeneration or an edit), never queried by file. The name and size
are kept with the id so a chip still says what was attached after the file is deleted. Empty for every
existing message; SQLite adds the column in place (a constant default needs no table rebuild).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_message_attachments"
down_revision = "0020_files"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agent_messages", sa.Column("attachments", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    # in place (SQLite 3.35+): a batch copy of the table would break the search triggers that name it
    op.drop_column("agent_messages", "attachments")
