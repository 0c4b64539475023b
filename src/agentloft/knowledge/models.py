"""Tables ``knowledge_collections``, ``knowledge_files`` and ``knowledge_chunks``.

A collection belongs to the user who made it. A file joins a collection by reference (the file stays the
user's own, in ``files``); removing it from the collection, deleting the file or deleting the collection
deletes its chunks by cascade. The lexical index over ``knowledge_chunks.terms`` is not mapped: the
migration creates it per dialect (SQLite FTS5 kept by triggers, PostgreSQL a generated ``tsvector``
column with a GIN index) and only ``knowledge.search`` queries it.
"""

from __future__ import annotations

from typing import Literal

from sqlalchemy import ForeignKey, ForeignKeyConstraint, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, StorableText, TimestampMixin
from agentloft.core.ids import new_id

KnowledgeFileStatus = Literal["processing", "ready", "failed"]


def _new_collection_id() -> str:
    return new_id("kb")


class KnowledgeCollection(TimestampMixin, Base):
    __tablename__ = "knowledge_collections"

    id: Mapped[str] = mapped_column(String(64), primary_key=True, default=_new_collection_id)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")

    __table_args__ = (Index("idx_knowledge_collections_user", "user_id", "created_at"),)


class KnowledgeFile(TimestampMixin, Base):
    """One file of a collection and how far its indexing got. ``error`` says why it failed."""

    __tablename__ = "knowledge_files"

    collection_id: Mapped[str] = mapped_column(
        ForeignKey("knowledge_collections.id", ondelete="CASCADE"), primary_key=True)
    file_id: Mapped[str] = mapped_column(ForeignKey("files.id", ondelete="CASCADE"), primary_key=True)
    status: Mapped[KnowledgeFileStatus] = mapped_column(String(16), nullable=False, default="processing")
    error: Mapped[str | None] = mapped_column(StorableText, nullable=True)
    chunks: Mapped[int] = mapped_column(Integer, nullable=False, default=0)

    __table_args__ = (Index("idx_knowledge_files_file", "file_id"),)


class KnowledgeChunk(Base):
    """A piece of a file's text (``knowledge.chunking``) and its index tokens (``knowledge.terms``).
    Written and deleted, never updated: the index triggers rely on it."""

    __tablename__ = "knowledge_chunks"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    collection_id: Mapped[str] = mapped_column(String(64), nullable=False)
    file_id: Mapped[str] = mapped_column(String(64), nullable=False)
    ord: Mapped[int] = mapped_column(Integer, nullable=False)
    page: Mapped[int | None] = mapped_column(Integer, nullable=True)
    text: Mapped[str] = mapped_column(StorableText, nullable=False)
    terms: Mapped[str] = mapped_column(Text, nullable=False)

    __table_args__ = (
        ForeignKeyConstraint(["collection_id", "file_id"], ["knowledge_files.collection_id", "knowledge_files.file_id"],
                             ondelete="CASCADE"),
        Index("idx_knowledge_chunks_file", "collection_id", "file_id", "ord"),
    )


class KnowledgeVector(Base):
    """A chunk's embedding by one model: ``dim`` float32 values, L2-normalised (``knowledge.vectors``).
    Replaced by a new row (a new ``id``), never updated, so a collection's newest id changes with every
    write (migration 0025)."""

    __tablename__ = "knowledge_vectors"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    chunk_id: Mapped[int] = mapped_column(ForeignKey("knowledge_chunks.id", ondelete="CASCADE"), nullable=False)
    collection_id: Mapped[str] = mapped_column(String(64), nullable=False)
    model_id: Mapped[int] = mapped_column(ForeignKey("model_configs.id", ondelete="CASCADE"), nullable=False)
    dim: Mapped[int] = mapped_column(Integer, nullable=False)
    vector: Mapped[bytes] = mapped_column(LargeBinary, nullable=False)

    __table_args__ = (
        Index("uq_knowledge_vectors_chunk", "chunk_id", unique=True),
        Index("idx_knowledge_vectors_collection", "collection_id", "id"),
        Index("idx_knowledge_vectors_model", "model_id"),
        {"sqlite_autoincrement": True},
    )
