"""The files API's bodies (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime

from agentloft.core.schemas import ApiModel
from agentloft.files.models import FileStatus


class FileRead(ApiModel):
    id: str
    name: str
    media_type: str
    size: int
    status: FileStatus
    error: str | None
    chars: int | None
    pages: int | None
    created_at: datetime
