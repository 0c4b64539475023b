"""The audit trail's tables: the events, and the one row that says where the chain ends and starts.

``audit_chain`` is one row (id 1). Appending an event locks it (``audit.chain.append``), so the events of
several workers form one chain with ids in order and no gaps; retention moves its start forward
(``start_id``, ``start_hash``), so what is left still verifies."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, StorableJSON, StorableString, UTCDateTime

GENESIS = "0" * 64
"""The ``prev_hash`` of the first event ever written."""


class AuditEvent(Base):
    """One thing that happened. Never updated; deleted only by retention (``service.purge``)."""

    __tablename__ = "audit_events"

    # Given by the appender from the chain head (not the database's sequence): ids are the chain's order.
    id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), primary_key=True,
                                    autoincrement=False)
    at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    type: Mapped[str] = mapped_column(String(40), nullable=False)
    actor_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    actor_name: Mapped[str | None] = mapped_column(StorableString(200), nullable=True)
    ip: Mapped[str | None] = mapped_column(String(64), nullable=True)
    target: Mapped[str | None] = mapped_column(StorableString(300), nullable=True)
    detail: Mapped[dict[str, Any]] = mapped_column(StorableJSON, nullable=False)
    prev_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    hash: Mapped[str] = mapped_column(String(64), nullable=False)

    __table_args__ = (
        Index("ix_audit_events_type_id", "type", "id"),
        Index("ix_audit_events_actor_id_id", "actor_id", "id"),
        Index("ix_audit_events_at", "at"),
    )


class AuditChain(Base):
    """The chain head: the last event's id and hash, and where the kept chain starts."""

    __tablename__ = "audit_chain"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    last_id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), nullable=False)
    last_hash: Mapped[str] = mapped_column(String(64), nullable=False)
    # the first kept event's id and the hash it names as its predecessor (GENESIS until retention deletes)
    start_id: Mapped[int] = mapped_column(BigInteger().with_variant(Integer, "sqlite"), nullable=False)
    start_hash: Mapped[str] = mapped_column(String(64), nullable=False)
