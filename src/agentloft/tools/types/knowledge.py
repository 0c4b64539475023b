"""Knowledge: the model searches the knowledge collections an admin gave the tool.

Only an admin's collections are searched: a tool on an agent serves everyone who may use the agent, and a
user's own collection is private to them. A configured id that is missing or not an admin's makes the
tool unavailable (left out of runs, the reason shown to admins, ``unavailable``) rather than silently
searching less; execution checks again, since the owner may have changed since the listing.

The result holds the best chunks with their file name, page and chunk id. The same chunks go into the
caller's stream as a ``data-knowledge-sources`` part, which the chat keeps with the reply and shows under
it as its "Sources" (file, page, the chunk's text on click): no second request, so a user sees the
chunks the model read even from an admin's collection they cannot open themselves.

``OwnKnowledgeTool`` is the same search over a user's own collections, for the chat they attached them to
(``chat.knowledge``): built per turn, never registered, so it reaches no other run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.errors import AppError
from agentloft.core.schemas import ApiModel
from agentloft.groups import access
from agentloft.knowledge import service as knowledge_service
from agentloft.tools.base import Hidden, ToolContext, ToolResult, ToolType

MAX_TOP_K = 20
# The ``data-knowledge-sources`` chunk the chat shows as a reply's sources (``chat/extensions/knowledge-sources.js``).
SOURCES_EVENT = "knowledge-sources"


class Config(ApiModel):
    collection_ids: list[str] = Field(
        default_factory=list, max_length=20,
        description="Ids (kb_…) of the admins' knowledge collections this tool searches.")
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K, description="How many chunks one search returns.")


class Input(ApiModel):
    query: str = Field(min_length=1, max_length=500,
                       description="What to look for: a question or key words, in the documents' language.")


def _unknown(config: Mapping[str, Any], found: set[str]) -> list[str]:
    ids = config.get("collectionIds") or []
    return [str(i) for i in ids if i not in found]


class KnowledgeTool(ToolType[Config, Input]):
    slug = "knowledge"
    name = "Knowledge"
    description = "Searches knowledge collections of files for passages relevant to a question."
    Config = Config
    Input = Input
    needed_to_enable = ("collection_ids",)

    def describe(self, config: Config) -> str:
        return (
            "Search the knowledge base (files the organisation provided) for passages relevant to a "
            f"question; returns up to {config.top_k} passages, best first, each with its file name, page "
            "and chunk id. Use it before answering questions the files may cover, and name the files you "
            "used."
        )

    def for_caller(self, config: Config, hidden: Hidden) -> Config | None:
        """Left out for a caller from whom every collection it searches is hidden (``groups.access``): it
        would find nothing, and a model offered it would search in vain. With one collection left it stays
        as it is: the description names no collection, and ``execute`` searches only those the caller may
        use."""
        if config.collection_ids and hidden.collections.issuperset(config.collection_ids):
            return None
        return config

    async def unavailable(self, *, db: AsyncSession, configs: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
        wanted = {str(i) for c in configs.values() for i in (c.get("collectionIds") or [])}
        found = await knowledge_service.admin_collection_ids(db=db, collection_ids=sorted(wanted))
        reasons: dict[str, str] = {}
        for tool_id, config in configs.items():
            if missing := _unknown(config, found):
                reasons[tool_id] = (f"knowledge collection {', '.join(missing)} does not exist or is not an "
                                    "admin's")
        return reasons

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        """Searches the configured collections the calling user may use (``groups.access``: a collection
        limited to groups is searched only for their members and admins)."""
        viewer = access.Viewer(role=ctx.user_role, group_ids=ctx.group_ids)
        async with ctx.runtime.db.session() as db:
            found = await knowledge_service.admin_collection_ids(db=db, collection_ids=config.collection_ids)
            limits = await access.load_limits(db=db, viewer=viewer)
        ids = [i for i in config.collection_ids if i in found and limits.allows(viewer, "collection", i)]
        return await search_and_cite(ids, input, config.top_k, ctx)


async def search_and_cite(collection_ids: list[str], input: Input, top_k: int, ctx: ToolContext) -> ToolResult:
    """Search the collections the caller checked, and send the chunks found as the reply's sources."""
    if not collection_ids:
        return ToolResult.fail("this tool has no knowledge collection it can search", code="knowledge_not_found")
    try:
        result = await knowledge_service.search_collections(rt=ctx.runtime, collection_ids=collection_ids,
                                                            q=input.query, top_k=top_k, user_id=ctx.user_id)
    except AppError as err:
        return ToolResult.fail(err.message, code=err.code)
    results = [{"chunkId": h.chunk_id, "fileName": h.file_name, "page": h.page, "text": h.text,
                "score": round(h.score, 4)} for h in result.items]
    if results:  # the reply's "Sources" list: kept with the message, shown under it
        await ctx.emit(SOURCES_EVENT, {"toolCallId": ctx.tool_call_id, "sources": [
            {k: r[k] for k in ("chunkId", "fileName", "page", "text")} for r in results]})
    return ToolResult.ok({"query": input.query, "mode": result.mode, "results": results})


class OwnConfig(ApiModel):
    collection_ids: list[str] = Field(default_factory=list)
    names: list[str] = Field(default_factory=list)
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K)


class OwnKnowledgeTool(ToolType[OwnConfig, Input]):
    """The tool a chat gets for the collections its user attached (``chat.knowledge``). Never registered:
    no admin configures it, and it searches only what is the calling user's own at the moment of the call
    (another user's or a deleted collection is left out, as the session's list is read)."""

    slug = "own_knowledge"
    name = "My knowledge"
    description = "Searches the knowledge collections the user attached to this chat."
    Config = OwnConfig
    Input = Input
    made_by_hand = False

    def describe(self, config: OwnConfig) -> str:
        names = ", ".join(f'"{n}"' for n in config.names)
        return (
            f"Search the user's own knowledge collections attached to this chat ({names}) for passages "
            f"relevant to a question; returns up to {config.top_k} passages, best first, each with its file "
            "name, page and chunk id. Use it before answering questions these files may cover, and name the "
            "files you used."
        )

    async def execute(self, input: Input, config: OwnConfig, ctx: ToolContext) -> ToolResult:
        if ctx.user_id is None:
            return await search_and_cite([], input, config.top_k, ctx)
        async with ctx.runtime.db.session() as db:
            owned = await knowledge_service.owned_collections(db=db, user_id=ctx.user_id,
                                                              collection_ids=config.collection_ids)
        return await search_and_cite([i for i, _ in owned], input, config.top_k, ctx)


TOOL_TYPE = KnowledgeTool()
