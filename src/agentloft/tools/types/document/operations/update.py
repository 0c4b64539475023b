"""update: change title, content, type, summary or tags; the previous state is kept as a version and a
new content without a new summary gets a freshly cut one."""

from __future__ import annotations

from agentloft.documents import service as documents_service
from agentloft.tools.base import ToolContext, ToolResult
from agentloft.tools.types.document.config import UPDATABLE, Config, Input
from agentloft.tools.types.document.operations._common import iso, page_link, user_id


async def run(input: Input, config: Config, ctx: ToolContext) -> ToolResult:
    changes = {f: getattr(input, f) for f in UPDATABLE if getattr(input, f) is not None}
    async with ctx.runtime.db.session() as db:
        row = await documents_service.update_document(
            db=db,
            user_id=user_id(ctx),
            document_id=input.id or "",
            changes=changes,
            max_content_length=config.max_content_length,
            summary_length=config.default_summary_length,
            storage_limit=ctx.runtime.settings.user_storage_bytes,
        )
        data = {"id": row.id, "title": row.title, "updatedAt": iso(row.updated_at)}
    return ToolResult.ok(data, link=page_link(data["id"]))
