"""The model table: each model an admin set up (chat or embedding), with its encrypted API key and prices."""

from __future__ import annotations

from typing import Literal

from sqlalchemy import Boolean, Float, Index, Integer, String, Text, false
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin

Provider = Literal["openai", "anthropic"]
ModelKind = Literal["chat", "embedding"]
"""What a model is for: ``chat`` models run agents and chats; an ``embedding`` model turns knowledge chunks
and search queries into vectors (``llm.embeddings``). Neither is ever offered where the other belongs."""


class ModelConfig(TimestampMixin, Base):
    """A model: what it is for, which provider, where, which model name, and its encrypted API key."""

    __tablename__ = "model_configs"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    provider: Mapped[Provider] = mapped_column(String(20), nullable=False)
    base_url: Mapped[str | None] = mapped_column(String(500), nullable=True)
    model: Mapped[str] = mapped_column(String(200), nullable=False)
    api_key_enc: Mapped[str | None] = mapped_column(Text, nullable=True)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    is_default: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    # a server default only (both rows the service creates name it): a Python one would put the column into
    # every insert, also those of the migration tests that write rows at an older revision
    kind: Mapped[ModelKind] = mapped_column(String(16), nullable=False, server_default="chat")
    # added by 0024_model_vision: it reads images (chat attachments); the presets' default, editable. Set
    # by whoever creates a row (``llm.service``); a server default only, as for ``agent_messages.attachments``
    vision: Mapped[bool] = mapped_column(Boolean, nullable=False, server_default=false())
    # added by 0031_usage: USD per million tokens, as the admin set them; null: unknown (its runs' cost is null)
    input_price_per_mtok: Mapped[float | None] = mapped_column(Float, nullable=True)
    output_price_per_mtok: Mapped[float | None] = mapped_column(Float, nullable=True)

    # Names are unique: the pickers show a model by its name (migration 0013, which says why an index).
    __table_args__ = (Index("uq_model_configs_name", "name", unique=True),)
