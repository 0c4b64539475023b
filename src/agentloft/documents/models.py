"""Tables: ``agent_documents`` (seed 000, chapter 1) and ``agent_document_versions`` (history).

The full-text index is not a mapped table: it is created by the migration per dialect (SQLite FTS5,
PostgreSQL pg_trgm) and only ``documents.search`` queries it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal, get_args

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime, utcnow
from agentloft.core.ids import new_id

DocumentType = Literal["memory", "document"]
DOCUMENT_TYPES: tuple[DocumentType, ...] = get_args(DocumentType)


def _new_document_id() -> str:
    return new_id("ad")


class AgentDocument(TimestampMixin, Base):
    """One document owned by one user. ``session_id`` is set only by the tool (the chat session that
    wrote it); it has no foreign key so a document outlives the conversation it came from."""

    __tablename__ = "agent_documents"

    id: Mapped[str] = mapped_column(String(64), primary_key=True, default=_new_document_id)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    session_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    type: Mapped[DocumentType] = mapped_column(String(16), nullable=False, default="memory")
    title: Mapped[str] = mapped_column(String(255), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    tags: Mapped[str | None] = mapped_column(String(500), nullable=True)

    __table_args__ = (
        Index("idx_agent_doc_user_type", "user_id", "type"),
        Index("idx_agent_doc_user_created", "user_id", "created_at"),
        Index("idx_agent_doc_session", "session_id"),
    )


class AgentDocumentVersion(Base):
    """A previous state of a document, kept on every update. ``created_at`` is when that state was
    written (the document's ``updated_at`` at the time), so the history reads as "what it said when"."""

    __tablename__ = "agent_document_versions"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    document_id: Mapped[str] = mapped_column(
        ForeignKey("agent_documents.id", ondelete="CASCADE"), nullable=False
    )
    version: Mapped[int] = mapped_column(Integer, nullable=False)
    type: Mapped[DocumentType] = mapped_column(String(16), nullable=False)
    title: Mapped[str] = mapped_column(String(255), nullable=False)
    content: Mapped[str] = mapped_column(Text, nullable=False)
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    tags: Mapped[str | None] = mapped_column(String(500), nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)

    __table_args__ = (UniqueConstraint("document_id", "version", name="uq_agent_doc_version"),)
