"""Instance-wide tables: the settings an admin changed (the rest come from the environment) and the
heartbeats of the running server processes.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime


class AppSetting(TimestampMixin, Base):
    """One instance-wide setting; absent rows fall back to the environment's value."""

    __tablename__ = "app_settings"

    key: Mapped[str] = mapped_column(String(64), primary_key=True)
    value: Mapped[Any] = mapped_column(JSON, nullable=True)


class WorkerProcess(Base):
    """A running server process, renewed by its heartbeat (``system.workers``). ``shared``: it keeps its
    runs in Redis, so it may have company; a process without Redis must be alone on its database."""

    __tablename__ = "worker_processes"

    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    host: Mapped[str] = mapped_column(String(255), nullable=False)
    pid: Mapped[int] = mapped_column(Integer, nullable=False)
    shared: Mapped[bool] = mapped_column(Boolean, nullable=False)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
    heartbeat_at: Mapped[datetime] = mapped_column(UTCDateTime(), nullable=False)
