"""Chat tables: sessions, their messages, and the tool calls waiting for the user's answer.

Everything needed to continue a run lives here (model history, pending approvals), so any process can
continue it after a restart; the stream buffers only hold what is being sent right now.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final, Literal

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint, false, text
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, StorableJSON, StorableString, StorableText, TimestampMixin, UTCDateTime, utcnow

# Session status: what the session is doing now (at most one turn at a time).
IDLE: Final = "idle"
RUNNING: Final = "running"
AWAITING_APPROVAL: Final = "awaiting_approval"
SessionStatus = Literal["idle", "running", "awaiting_approval"]

# Message status.
COMPLETE: Final = "complete"
STREAMING: Final = "streaming"
FAILED: Final = "failed"
STOPPED: Final = "stopped"
INTERRUPTED: Final = "interrupted"
# (an assistant message whose run paused on approvals also carries AWAITING_APPROVAL)
MessageStatus = Literal["complete", "streaming", "failed", "stopped", "interrupted", "awaiting_approval"]
# How a turn ended (``engine.TurnResult``): the status its reply is saved with, never ``streaming``.
TurnStatus = Literal["complete", "failed", "stopped", "interrupted", "awaiting_approval"]

# Where a session's title came from.
TITLE_AUTO = "auto"
TITLE_GENERATED = "generated"
TITLE_USER = "user"


class AgentSession(TimestampMixin, Base):
    """A conversation of one user, with an agent (``kind='agent'``) or the plain model (``kind='llm'``)."""

    __tablename__ = "agent_sessions"
    # the running sessions of each user, counted as a turn starts (migration 0019_running_sessions), and
    # the sessions paused on a tool call, for the sweep of A2A callers left waiting (0039_waiting_tasks)
    __table_args__ = (Index("ix_agent_sessions_user_running", "user_id", sqlite_where=text("status = 'running'"),
                            postgresql_where=text("status = 'running'")),
                      Index("ix_agent_sessions_awaiting", "id", sqlite_where=text("status = 'awaiting_approval'"),
                            postgresql_where=text("status = 'awaiting_approval'")))

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True)
    agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), nullable=True, index=True
    )
    kind: Mapped[str] = mapped_column(String(10), nullable=False, default="agent")
    title: Mapped[str] = mapped_column(StorableString(200), nullable=False, default="")
    status: Mapped[str] = mapped_column(String(20), nullable=False, default=IDLE)
    # pydantic-ai ModelMessagesTypeAdapter JSON: the history the next run continues from. Plain text: the
    # JSON escapes U+0000, so the model gets back exactly what it saw (the columns the user reads are
    # ``Storable*``: see ``core.db.storable``).
    model_history: Mapped[str | None] = mapped_column(Text, nullable=True)
    # added by 0008_chat_ui: TITLE_AUTO (the first words, a generated title may replace it), TITLE_GENERATED
    # or TITLE_USER (renamed: never replaced)
    title_source: Mapped[str] = mapped_column(String(10), nullable=False, default="auto", server_default="auto")
    deleted_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # added by 0030_session_knowledge: the ids of the user's own knowledge collections this chat searches
    # (``chat.knowledge``), in the order they were attached; a deleted one is dropped where it is read.
    # A server default only, as ``AgentMessage.attachments``
    knowledge_ids: Mapped[list[str]] = mapped_column(JSON, nullable=False, server_default="[]")
    # added by 0036_hidden_sessions: kept out of the user's lists, search and running count; set when the
    # session is created (an A2A task's session, ``a2a.service.create_task``), so no list depends on
    # which domains a process imported.
    hidden: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False, server_default=false())


class AgentMessage(TimestampMixin, Base):
    """One message as the user sees it. ``parts`` follow the Vercel AI SDK UIMessage part shapes."""

    __tablename__ = "agent_messages"
    __table_args__ = (Index("ix_agent_messages_session_sort", "session_id", "sort_order"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("agent_sessions.id", ondelete="CASCADE"), nullable=False
    )
    role: Mapped[str] = mapped_column(String(16), nullable=False)
    # ``Storable*``: U+0000 in a reply, a tool's input or output becomes U+FFFD (see ``core.db.storable``)
    content: Mapped[str] = mapped_column(StorableText, nullable=False, default="")
    parts: Mapped[list[dict[str, Any]]] = mapped_column(StorableJSON, nullable=False, default=list)
    model_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_configs.id", ondelete="SET NULL"), nullable=True
    )
    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    status: Mapped[str] = mapped_column(String(20), nullable=False, default=COMPLETE)
    error: Mapped[str | None] = mapped_column(StorableText, nullable=True)
    sort_order: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
    # added by 0005_a2a: where the message came from (seed 003, 3.1.1); indexes are in a2a/models.py
    source: Mapped[str] = mapped_column(String(10), nullable=False, default="user", server_default="user")
    a2a_task_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    caller_agent_id: Mapped[int | None] = mapped_column(
        ForeignKey("agents.id", ondelete="SET NULL"), nullable=True
    )
    caller_session_id: Mapped[str | None] = mapped_column(Text, nullable=True)
    # added by 0008_chat_ui: on a reply, how many messages the session's model history had once its turn
    # was saved (an edit or a regeneration cuts the history back to the last earlier reply's length);
    # NULL on user messages, on replies whose turn saved no history, and on rows from before 0008
    history_length: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # added by 0021_message_attachments: on a user message, the files sent with it, in order, as
    # ``{"id", "name", "mediaType", "size"}`` (``chat.attachments``); empty on every other message. A server
    # default only: a Python one would put the column into every insert, also those of the migration
    # tests that write rows at an older revision
    attachments: Mapped[list[dict[str, Any]]] = mapped_column(StorableJSON, nullable=False, server_default="[]")


class ChatApproval(Base):
    """A tool call the run paused on. Answered once: the conditional update from ``pending`` is what
    makes a second (or concurrent) answer a 409."""

    __tablename__ = "chat_approvals"
    # the pending calls alone, counted at each metrics scrape (migration 0035_pending_approvals)
    __table_args__ = (UniqueConstraint("session_id", "tool_call_id"),
                      Index("ix_chat_approvals_pending", "id", sqlite_where=text("status = 'pending'"),
                            postgresql_where=text("status = 'pending'")))

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(
        ForeignKey("agent_sessions.id", ondelete="CASCADE"), nullable=False, index=True
    )
    message_id: Mapped[str] = mapped_column(ForeignKey("agent_messages.id", ondelete="CASCADE"), nullable=False)
    tool_call_id: Mapped[str] = mapped_column(String(200), nullable=False)
    tool_name: Mapped[str] = mapped_column(String(200), nullable=False)
    input: Mapped[Any] = mapped_column(StorableJSON, nullable=True)
    status: Mapped[str] = mapped_column(String(16), nullable=False, default="pending")
    reason: Mapped[str | None] = mapped_column(StorableText, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    answered_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    # added by 0037_tool_approvers: the tool the call belongs to (its ``RunTool.id``; no foreign key, see the
    # migration), which says who may answer (``chat.approvals``), and the user who answered
    tool_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    answered_by: Mapped[int | None] = mapped_column(Integer, nullable=True)
