"""API bodies for /api/agent-documents. ``sessionId`` is deliberately absent: only the document tool
sets it (from the chat run), and ``ApiModel`` refuses unknown keys, so a client sending it gets 422."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, StringConstraints

from agentloft.core.schemas import ApiModel
from agentloft.documents.models import DocumentType

Title = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
Tags = Annotated[str, StringConstraints(max_length=500)]


class DocumentCreate(ApiModel):
    title: Title
    content: str = Field(description="Markdown. Over the limit answers 413, not 422.")
    type: DocumentType = Field(default="document", description="Made by hand, so a deliverable by default.")
    summary: str | None = Field(default=None, description="Empty: cut from the start of the content.")
    tags: Tags | None = Field(default=None, description="Comma-separated.")


class DocumentUpdate(ApiModel):
    title: Title | None = None
    content: str | None = None
    type: DocumentType | None = None
    summary: str | None = None
    tags: Tags | None = None


class DocumentListItem(ApiModel):
    id: str
    type: DocumentType
    title: str
    summary: str | None
    tags: str | None
    created_at: datetime
    updated_at: datetime


class DocumentRead(DocumentListItem):
    content: str


class VersionListItem(ApiModel):
    version: int
    type: DocumentType
    title: str
    summary: str | None
    tags: str | None
    created_at: datetime
    content_length: int


class VersionRead(VersionListItem):
    content: str
