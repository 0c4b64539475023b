"""Tables ``groups`` and ``group_members``.

A group's name is unique within its source, not across sources: two providers that both send "staff"
mean two different sets of people, and a provider's group must not merge into (or be blocked by) an
admin's local group of the same name. Deleting a group or a user removes their memberships by cascade.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime, utcnow

LOCAL_SOURCE = "local"
NAME_MAX = 255
# Exactly one of ``resource_groups``' resource columns is set (a CASE sum: PostgreSQL adds no booleans).
RESOURCE_COLUMNS = ("agent_id", "model_id", "tool_id", "collection_id")
ONE_RESOURCE = " + ".join(f"CASE WHEN {c} IS NULL THEN 0 ELSE 1 END" for c in RESOURCE_COLUMNS) + " = 1"


class Group(TimestampMixin, Base):
    __tablename__ = "groups"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(NAME_MAX), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    source: Mapped[str] = mapped_column(String(64), nullable=False, default=LOCAL_SOURCE)

    __table_args__ = (UniqueConstraint("source", "name", name="uq_groups_source_name"),)


class GroupMember(Base):
    __tablename__ = "group_members"

    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)

    __table_args__ = (Index("idx_group_members_user", "user_id"),)


class ResourceGroup(Base):
    """One group a resource is limited to. One table for every kind of resource, with a column per kind
    (exactly one set) rather than a ``(kind, resource_id)`` pair: each column is a real foreign key, so
    deleting the resource or the group deletes the row by cascade, and a resource that later gets a
    deleted one's id (SQLite reuses the highest rowid) inherits nothing. Reading one table serves every
    kind in one statement (``groups.access.load_limits``)."""

    __tablename__ = "resource_groups"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), nullable=False)
    agent_id: Mapped[int | None] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), nullable=True)
    model_id: Mapped[int | None] = mapped_column(ForeignKey("model_configs.id", ondelete="CASCADE"), nullable=True)
    tool_id: Mapped[str | None] = mapped_column(ForeignKey("agent_tools.id", ondelete="CASCADE"), nullable=True)
    collection_id: Mapped[str | None] = mapped_column(
        ForeignKey("knowledge_collections.id", ondelete="CASCADE"), nullable=True)

    __table_args__ = (
        CheckConstraint(ONE_RESOURCE, name="one_resource"),
        UniqueConstraint("agent_id", "group_id", name="uq_resource_groups_agent"),
        UniqueConstraint("model_id", "group_id", name="uq_resource_groups_model"),
        UniqueConstraint("tool_id", "group_id", name="uq_resource_groups_tool"),
        UniqueConstraint("collection_id", "group_id", name="uq_resource_groups_collection"),
        Index("idx_resource_groups_group", "group_id"),
    )


class ApproverGroup(Base):
    """One group whose members answer a tool's paused calls instead of the requester (``chat.approvals``).
    Deleting the tool or the group deletes the row by cascade; a group still named here is not deleted
    (``groups.service.delete_group``): its tool would quietly go back to being approved by the requester."""

    __tablename__ = "tool_approver_groups"

    tool_id: Mapped[str] = mapped_column(ForeignKey("agent_tools.id", ondelete="CASCADE"), primary_key=True)
    group_id: Mapped[int] = mapped_column(ForeignKey("groups.id", ondelete="CASCADE"), primary_key=True)

    __table_args__ = (Index("idx_tool_approver_groups_group", "group_id"),)
