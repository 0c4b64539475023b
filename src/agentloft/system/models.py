from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, String
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin


class AppSetting(TimestampMixin, Base):
    """One instance-wide setting; absent rows fall back to the environment's value."""

    __tablename__ = "app_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON, nullable=True)
