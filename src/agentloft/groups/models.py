"""Tables ``groups`` and ``group_members``.

A group's name is unique within its source, not across sources: two providers that both send "staff"
mean two different sets of people, and a provider's group must not merge into (or be blocked by) an
admin's local group of the same name. Deleting a group or a user removes their memberships by cascade.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime, utcnow

LOCAL_SOURCE = "local"
NAME_MAX = 255


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
