"""Shapes shared by the actions: how a document looks in a tool result."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentloft.documents.models import AgentDocument


def iso(value: datetime) -> str:
    return value.isoformat().replace("+00:00", "Z")


def page_link(document_id: str) -> str:
    """Where the document's page is: the chat shows it on the tool's card (``metadata.link``)."""
    return f"/agent-documents/{document_id}"


def list_item(row: AgentDocument) -> dict[str, Any]:
    """The seed's light list shape: no content."""
    return {
        "id": row.id,
        "title": row.title,
        "summary": row.summary,
        "type": row.type,
        "tags": row.tags,
        "updatedAt": iso(row.updated_at),
    }


def user_id(ctx: Any) -> int:
    """The owner every query is scoped to (``tool.execute`` has already refused a missing user)."""
    assert ctx.user_id is not None
    return int(ctx.user_id)
