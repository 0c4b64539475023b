"""An index of the tool calls waiting for an answer

Revision ID: 0035_pending_approvals
Revises: 0034_audit

The metrics' ``agentloft_approvals_pending`` counts the pending approvals of all users at every scrape
(``chat.service.count_pending_approvals``). ``chat_approvals`` keeps every call ever answered, so without
an index that count reads the whole table; this partial index holds only the pending ones (a handful at
any time). Its condition is a literal, and so is the count's, so both databases use it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0035_pending_approvals"
down_revision = "0034_audit"
branch_labels = None
depends_on = None

INDEX = "ix_chat_approvals_pending"
PENDING = sa.text("status = 'pending'")


def upgrade() -> None:
    op.create_index(INDEX, "chat_approvals", ["id"], sqlite_where=PENDING, postgresql_where=PENDING)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="chat_approvals")
