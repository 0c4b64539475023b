"""delete: hard delete (with its versions). Reaching here means the call was approved if it had to be."""

from __future__ import annotations

from agentloft.documents import service as documents_service
from agentloft.tools.base import ToolContext, ToolResult
from agentloft.tools.types.document.config import Config, Input
from agentloft.tools.types.document.operations._common import user_id


async def run(input: Input, config: Config, ctx: ToolContext) -> ToolResult:
    async with ctx.runtime.db.session() as db:
        await documents_service.delete_document(db=db, user_id=user_id(ctx), document_id=input.id or "")
    return ToolResult.ok({"id": input.id, "deleted": True})
