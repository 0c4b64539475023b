"""A session's own ``hidden`` flag (``agent_sessions.hidden``), replacing ``a2a_task_sessions.visible_in_sidebar``

Revision ID: 0036_hidden_sessions
Revises: 0035_pending_approvals

The session list left out an A2A task's session through a filter the A2A models appended to the chat
service when they were imported: whether such a session leaked into the sidebar depended on what the
process had imported. The flag now lives on the session, set when the A2A task creates it, and every
list reads the column. The backfill hides what the filter hid: a session whose task row had
``visible_in_sidebar = 0``. The task row's column goes, so there is one place that says it.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0036_hidden_sessions"
down_revision = "0035_pending_approvals"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agent_sessions", sa.Column("hidden", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute("UPDATE agent_sessions SET hidden = true WHERE EXISTS (SELECT 1 FROM a2a_task_sessions t "
               "WHERE t.session_id = agent_sessions.id AND t.visible_in_sidebar = 0)")
    op.drop_column("a2a_task_sessions", "visible_in_sidebar")  # in place (SQLite 3.35+), no copy of the table


def downgrade() -> None:
    op.add_column("a2a_task_sessions",
                  sa.Column("visible_in_sidebar", sa.Integer(), nullable=False, server_default="0"))
    op.execute("UPDATE a2a_task_sessions SET visible_in_sidebar = 1 WHERE EXISTS (SELECT 1 FROM agent_sessions s "
               "WHERE s.id = a2a_task_sessions.session_id AND s.hidden = false)")
    # in place (SQLite 3.35+): a batch copy of the table would break the search triggers that name it
    op.drop_column("agent_sessions", "hidden")
