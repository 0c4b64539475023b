"""Tool rows: an instance of a tool type with its config, and the link between agents and tools.

``admin_only`` is an INTEGER 0/1 column, as seed 001 specifies (``integer("admin_only").default(0)``); the
API speaks booleans and the service converts. Secret config values never sit in ``config``: they live,
each encrypted on its own, in ``secrets_enc`` (``{"apiKey": "<fernet token>"}``): the names of the set
secrets can be listed without decrypting anything.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint, text
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin
from agentloft.core.ids import new_id


def _tool_id() -> str:
    return new_id("at")


class AgentTool(TimestampMixin, Base):
    __tablename__ = "agent_tools"

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=_tool_id)
    slug: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    type: Mapped[str] = mapped_column(String(64), nullable=False)
    # Non-secret config values, keyed by the type's JSON (camelCase) field names.
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    # Secret config fields: JSON name → Fernet token of the JSON-encoded value.
    secrets_enc: Mapped[dict[str, str]] = mapped_column(JSON, nullable=False, default=dict)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    needs_approval: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    admin_only: Mapped[int] = mapped_column(Integer, nullable=False, default=0, server_default=text("0"))
    # whether the audit trail keeps each call's arguments (``tool.call``); off, it keeps only their names
    audit_arguments: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False,
                                                  server_default=text("false"))


class AgentToolAssociation(Base):
    """An agent's tool. ``needs_approval`` NULL inherits the tool's setting; a value overrides it."""

    __tablename__ = "agent_tool_associations"
    __table_args__ = (UniqueConstraint("agent_id", "tool_id"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    agent_id: Mapped[int] = mapped_column(ForeignKey("agents.id", ondelete="CASCADE"), nullable=False)
    tool_id: Mapped[str] = mapped_column(
        ForeignKey("agent_tools.id", ondelete="CASCADE"), nullable=False, index=True
    )
    needs_approval: Mapped[bool | None] = mapped_column(Boolean, nullable=True)
    position: Mapped[int] = mapped_column(Integer, nullable=False, default=0)
