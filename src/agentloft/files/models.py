"""Table ``files``: one row per uploaded file. The bytes and the text read from them live in the store
(``files.store``), never in a column a list reads."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from sqlalchemy import BigInteger, ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, StorableText, UTCDateTime, utcnow
from agentloft.core.ids import new_id

FileStatus = Literal["processing", "ready", "failed"]


def _new_file_id() -> str:
    return new_id("fl")


class File(Base):
    """``chars``: characters of text read from it; ``pages``: its pages (PDF), slides (PPTX) or sheets
    (XLSX), None for formats without them. Both None until it is ``ready``, and for images."""

    __tablename__ = "files"

    id: Mapped[str] = mapped_column(String(64), primary_key=True, default=_new_file_id)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), nullable=False)
    name: Mapped[str] = mapped_column(String(255), nullable=False)
    media_type: Mapped[str] = mapped_column(String(127), nullable=False)
    size: Mapped[int] = mapped_column(BigInteger, nullable=False)
    sha256: Mapped[str] = mapped_column(String(64), nullable=False)
    status: Mapped[FileStatus] = mapped_column(String(16), nullable=False)
    error: Mapped[str | None] = mapped_column(StorableText, nullable=True)
    chars: Mapped[int | None] = mapped_column(Integer, nullable=True)
    pages: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)

    __table_args__ = (Index("idx_files_user_created", "user_id", "created_at"),)
