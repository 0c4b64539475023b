"""read: one document by id, or the best match for ``q``.

The content comes back when it fits the token budget (or when ``fullContent`` is true); over budget the
result carries the summary and the seed's hint to ask for ``fullContent``. ``fullContent: false`` asks
for the summary only.
"""

from __future__ import annotations

from typing import Any

from agentloft.documents import service as documents_service
from agentloft.documents.models import AgentDocument
from agentloft.documents.tokens import estimate_tokens
from agentloft.tools.base import ToolContext, ToolResult
from agentloft.tools.types.document.config import Config, Input
from agentloft.tools.types.document.operations._common import iso, page_link, user_id
from agentloft.tools.types.document.token_budget import ITEM_OVERHEAD_TOKENS

OTHER_MATCHES = 4


def over_budget_hint(tokens: int, budget: int) -> str:
    return (
        f"The content is too long (about {tokens} tokens, over the budget of {budget}), so the summary "
        "was returned; set fullContent=true to get the whole content."
    )


def shape(row: AgentDocument, input: Input, config: Config) -> dict[str, Any]:
    tokens = estimate_tokens(row.content)
    data: dict[str, Any] = {
        "id": row.id,
        "title": row.title,
        "type": row.type,
        "summary": row.summary,
        "tags": row.tags,
        "createdAt": iso(row.created_at),
        "updatedAt": iso(row.updated_at),
        "contentLength": len(row.content),
        "contentTokens": tokens,
    }
    within = tokens + ITEM_OVERHEAD_TOKENS <= config.token_budget
    if input.full_content or (input.full_content is None and within):
        data["content"] = row.content
    elif input.full_content is None:
        data["hint"] = over_budget_hint(tokens, config.token_budget)
    return data


async def run(input: Input, config: Config, ctx: ToolContext) -> ToolResult:
    async with ctx.runtime.db.session() as db:
        if input.id:
            row = await documents_service.get_document_by_id(db=db, user_id=user_id(ctx), document_id=input.id)
            return ToolResult.ok(shape(row, input, config), link=page_link(row.id))
        found = await documents_service.list_documents(
            db=db, user_id=user_id(ctx), type=input.filter_type, q=input.q, page=1,
            page_size=OTHER_MATCHES + 1,
        )
        if not found.items:
            return ToolResult.fail(f"no document matches the search {input.q!r}", code="no_match")
        data = shape(found.items[0], input, config)
        data["totalMatches"] = found.total
        data["otherMatches"] = [{"id": r.id, "title": r.title} for r in found.items[1:]]
    return ToolResult.ok(data, link=page_link(data["id"]))
