"""list: the user's documents without content, newest first or ranked by ``q``, within the token
budget. When the budget cuts a page short, ``next`` says exactly how to continue (an offset), so no
document is skipped."""

from __future__ import annotations

from typing import Any

from agentloft.documents import service as documents_service
from agentloft.tools.base import ToolContext, ToolResult
from agentloft.tools.types.document.config import Config, Input
from agentloft.tools.types.document.operations._common import list_item, user_id
from agentloft.tools.types.document.token_budget import take_within

DEFAULT_PAGE_SIZE = 10


def _next_call(input: Input, page: int, size: int, next_offset: int, cut: bool) -> dict[str, Any]:
    call: dict[str, Any] = {"action": "list", "pageSize": size}
    if cut or input.offset is not None:
        call["offset"] = next_offset
    else:
        call["page"] = page + 1
    if input.q:
        call["q"] = input.q
    if input.filter_type:
        call["filterType"] = input.filter_type
    return call


async def run(input: Input, config: Config, ctx: ToolContext) -> ToolResult:
    size = min(input.page_size or DEFAULT_PAGE_SIZE, config.max_page_size)
    page = input.page or 1
    async with ctx.runtime.db.session() as db:
        found = await documents_service.list_documents(
            db=db, user_id=user_id(ctx), type=input.filter_type, q=input.q,
            page=page, page_size=size, offset=input.offset,
        )
        items = [list_item(r) for r in found.items]
    kept, spent = take_within(items, config.token_budget)
    cut = len(kept) < len(items)
    next_offset = found.offset + len(kept)
    has_more = next_offset < found.total
    data: dict[str, Any] = {
        "items": kept,
        "total": found.total,
        "page": found.page,
        "pageSize": size,
        "hasMore": has_more,
        "tokens": spent,
    }
    if has_more:
        data["next"] = _next_call(input, found.page, size, next_offset, cut)
        data["hint"] = (
            f"Stopped after {len(kept)} documents to stay within the token budget; "
            if cut else f"{found.total - next_offset} more documents; "
        ) + "call list with the arguments in 'next' to see more."
    return ToolResult.ok(data)
