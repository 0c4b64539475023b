"""``a2a_task_sessions``: one row per A2A task, internal (agent-invoke) or external (A2A clients).

The task id is the row id. ``session_id`` is the callee's chat session, owned by the calling user, which
holds the task's messages (``agent_messages.source = 'a2a'``); it is created hidden
(``AgentSession.hidden``), so it stays out of the session list. ``task_data`` keeps the A2A ``Task`` as
protocol JSON for tasks served over the A2A server, so ``GetTask`` works from any process and after a
restart.
``task_version`` counts the saves of ``task_data``.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.a2a import tasks
from agentloft.chat.models import AgentMessage
from agentloft.core.db import Base, TimestampMixin


class A2ATaskSession(TimestampMixin, Base):
    __tablename__ = "a2a_task_sessions"

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    session_id: Mapped[str | None] = mapped_column(
        ForeignKey("agent_sessions.id", ondelete="CASCADE"), nullable=True, index=True
    )
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="CASCADE"), nullable=True, index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    caller_agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), nullable=True
    )
    caller_session_id: Mapped[str | None] = mapped_column(Text, nullable=True, index=True)  # 0039_waiting_tasks
    caller_context: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    state: Mapped[str] = mapped_column(String(16), nullable=False, default=tasks.SUBMITTED)  # ``a2a.tasks``'s names
    task_data: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    # Bumped on every save of ``task_data`` (compare-and-set), so concurrent writers on several workers
    # see each other (a2a/server.py, ``RowTaskStore``).
    task_version: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default="0")

    # the tasks waiting for their calling user, for the sweep of what a dead worker left (0039_waiting_tasks)
    __table_args__ = (Index("ix_a2a_task_sessions_waiting", "session_id",
                            sqlite_where=text("state = 'input_required'"),
                            postgresql_where=text("state = 'input_required'")),)


# The message-source columns live on ``AgentMessage`` (chat/models.py, "added by 0005_a2a"); their indexes
# are declared here, next to the migration that creates them.
Index("idx_agent_messages_source", AgentMessage.source)
Index("ix_agent_messages_a2a_task_id", AgentMessage.a2a_task_id)

