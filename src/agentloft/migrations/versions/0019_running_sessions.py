"""An index of each user's sessions that are writing a reply

Revision ID: 0019_running_sessions
Revises: 0018_jobs

A turn starts only while the user has fewer than ``AGENTLOFT_MAX_RUNNING_CHATS_PER_USER`` chats running
(``chat.service.refuse_too_many_running``), counted in the database so that every worker counts the same
turns. Through ``ix_agent_sessions_user_id`` that count read every session of the user from the table to
look at its status: 37 ms for a user with 20,000 sessions, on every message. This partial index holds only
the running sessions (a handful at any time, whatever the table's size): 3 µs. Its condition is a literal,
and so is the count's, or neither database could use it for a statement with parameters.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_running_sessions"
down_revision = "0018_jobs"
branch_labels = None
depends_on = None

INDEX = "ix_agent_sessions_user_running"
RUNNING = sa.text("status = 'running'")


def upgrade() -> None:
    op.create_index(INDEX, "agent_sessions", ["user_id"], sqlite_where=RUNNING, postgresql_where=RUNNING)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="agent_sessions")
