"""The files API's bodies (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime

from pydantic import computed_field

from agentloft.core.schemas import ApiModel
from agentloft.files import reasons
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

    @computed_field
    @property
    def error_code(self) -> str | None:
        """Why it failed, as a code pages word in the reader's language (``files.reasons``)."""
        return reasons.error_code(self.error)
