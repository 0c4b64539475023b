"""create: store a new document for the user; the session id comes from the run, never the model."""

from __future__ import annotations

from agentloft.documents import service as documents_service
from agentloft.tools.base import ToolContext, ToolResult
from agentloft.tools.types.document.config import Config, Input
from agentloft.tools.types.document.operations._common import iso, page_link, user_id


async def run(input: Input, config: Config, ctx: ToolContext) -> ToolResult:
    async with ctx.runtime.db.session() as db:
        row = await documents_service.create_document(
            db=db,
            user_id=user_id(ctx),
            title=input.title or "",
            content=input.content or "",
            type=input.type or "memory",
            summary=input.summary,
            tags=input.tags,
            session_id=ctx.session_id,
            max_content_length=config.max_content_length,
            summary_length=config.default_summary_length,
            storage_limit=ctx.runtime.settings.user_storage_bytes,
        )
        data = {"id": row.id, "title": row.title, "type": row.type, "createdAt": iso(row.created_at)}
    return ToolResult.ok(data, link=page_link(data["id"]))
