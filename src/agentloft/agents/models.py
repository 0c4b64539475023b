"""Agents: an admin-configured prompt, model, limits and tools that users chat with.

A remote agent (``kind = 'remote'``, added by 0010) lives elsewhere and is reached over A2A: its card URL,
an encrypted bearer token and the card as last fetched are kept here; prompt, model and tools do not
apply to it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime

LOCAL = "local"
REMOTE = "remote"


class Agent(TimestampMixin, Base):
    __tablename__ = "agents"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    description: Mapped[str] = mapped_column(Text, nullable=False, default="")
    system_prompt: Mapped[str] = mapped_column(Text, nullable=False, default="")
    model_id: Mapped[int | None] = mapped_column(
        ForeignKey("model_configs.id", ondelete="SET NULL"), nullable=True
    )
    max_steps: Mapped[int] = mapped_column(Integer, nullable=False, default=10)
    max_output_tokens: Mapped[int] = mapped_column(Integer, nullable=False, default=4096)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    a2a_callable: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # added by 0010: remote agents (A2A)
    kind: Mapped[str] = mapped_column(String(10), nullable=False, default=LOCAL, server_default=LOCAL)
    card_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    remote_token_enc: Mapped[str | None] = mapped_column(Text, nullable=True)
    card: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    card_fetched_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    card_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # added by 0017: prompts a new chat offers as buttons under the agent's description
    starter_prompts: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list, server_default="[]")

    @property
    def remote_token_set(self) -> bool:
        return bool(self.remote_token_enc)

    @property
    def is_remote(self) -> bool:
        return self.kind == REMOTE
