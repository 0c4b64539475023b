"""Indexes of the A2A tasks that wait, of their callers, and of the sessions paused on a tool call

Revision ID: 0039_waiting_tasks
Revises: 0038_usage_daily

With several workers, every live worker looks every few seconds for what a worker that died left half
done (``a2a.waiting.sweep``): tasks still waiting whose callee's turn ended, and callers paused on a task
that settled. Both read few rows (the tasks waiting and the sessions paused right now), but without these
indexes each look read the whole of ``a2a_task_sessions``, which keeps every task ever run: 17 ms a look
on PostgreSQL at 100,000 tasks, 0.7 ms with them. The partial indexes' conditions are literals, and so are
the sweep's, or neither database could use them for a statement with parameters. The callers' index also
serves a caller's pause, which looks for its tasks (``waiting._settled_first``).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0039_waiting_tasks"
down_revision = "0038_usage_daily"
branch_labels = None
depends_on = None

TASKS = "ix_a2a_task_sessions_waiting"
WAITING = sa.text("state = 'input_required'")
SESSIONS = "ix_agent_sessions_awaiting"
AWAITING = sa.text("status = 'awaiting_approval'")
CALLERS = "ix_a2a_task_sessions_caller_session_id"


def upgrade() -> None:
    op.create_index(TASKS, "a2a_task_sessions", ["session_id"], sqlite_where=WAITING, postgresql_where=WAITING)
    op.create_index(SESSIONS, "agent_sessions", ["id"], sqlite_where=AWAITING, postgresql_where=AWAITING)
    op.create_index(CALLERS, "a2a_task_sessions", ["caller_session_id"])


def downgrade() -> None:
    op.drop_index(CALLERS, table_name="a2a_task_sessions")
    op.drop_index(SESSIONS, table_name="agent_sessions")
    op.drop_index(TASKS, table_name="a2a_task_sessions")
