"""The audit trail on the wire (the issue's contract: camelCase, newest first, a keyset cursor)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import Field

from agentloft.core.schemas import ApiModel


class AuditEventRead(ApiModel):
    id: int
    at: datetime
    type: str
    actor_id: int | None
    actor_name: str | None
    ip: str | None
    target: str | None
    detail: dict[str, Any]


class AuditPage(ApiModel):
    items: list[AuditEventRead]
    next_cursor: str | None = Field(description="Pass as ``cursor`` for the next (older) page; null: no more.")
