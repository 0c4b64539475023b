"""A user's own knowledge collections attached to a chat, and the tool that searches them in its turns.

``POST /api/agents/{slug}/chat`` and ``POST /api/llm/chat`` take ``"knowledgeIds": ["kb_…"]`` beside
``message``. Decisions the issue left open:

- **Kept on the session**, not on a message (``agent_sessions.knowledge_ids``): a collection is what the
  conversation is about rather than something one message carries, so later turns, a regeneration, an
  edit and the run resumed after an approval all search it without the page sending it again. Sending the
  field replaces the set (``[]`` clears it); leaving it out keeps it. ``GET /api/agent-sessions/{id}``
  shows it as ``knowledge: [{id, name}]``.
- **Only the caller's own collections**, at most ``MAX_COLLECTIONS``: another user's id, or one that does
  not exist, is ``404 knowledge_not_found`` (the same answer: no id probing), checked before anything is
  written; an admin's collection reaches other users only through an agent's ``knowledge`` tool.
- **A collection deleted later** stays in the stored list and is dropped wherever the list is read: the
  session shows, and the tool searches, only the user's collections that still exist. When none is left
  the model gets no tool for them.
- **The tool**: one per turn, ``OwnKnowledgeTool`` over exactly those collections, beside the agent's
  tools, named ``TOOL_NAME`` (with a number after it when the agent has a tool of that name already, so
  the two never collide). It checks the owner again when it runs, and its chunks show as the reply's
  "Sources" as the admin's tool's do. It needs no approval: it only reads what the user owns.

Reading the list costs a turn nothing: the claim that starts the turn returns it (``service.begin_turn``);
only a session that has collections reads their names, in the same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.runtime import Runtime
from agentloft.knowledge import service as knowledge_service
from agentloft.knowledge.errors import CollectionNotFound
from agentloft.tools.runner import RunTool
from agentloft.tools.types.knowledge import OwnConfig, OwnKnowledgeTool

MAX_COLLECTIONS = 5
"""The most collections one chat may search (the request is refused with 422 beyond it)."""
TOOL_NAME = "my_knowledge"
TOOL_TYPE = OwnKnowledgeTool()


async def check(rt: Runtime, *, user_id: int, collection_ids: Sequence[str] | None) -> list[str] | None:
    """The ids to keep on the session (duplicates dropped, order kept), each the user's own; None when the
    request left the set as it is. ``404 knowledge_not_found`` for any other id."""
    if collection_ids is None:
        return None
    wanted = list(dict.fromkeys(collection_ids))
    async with rt.db.read_session() as db:
        owned = await knowledge_service.owned_collections(db=db, user_id=user_id, collection_ids=wanted)
    if len(owned) != len(wanted):
        raise CollectionNotFound()
    return wanted


async def attached(db: AsyncSession, *, user_id: int, collection_ids: Sequence[str]) -> list[tuple[str, str]]:
    """(id, name) of the session's collections that are still the user's, in the order they were attached."""
    return await knowledge_service.owned_collections(db=db, user_id=user_id, collection_ids=collection_ids)


async def session_tools(db: AsyncSession, *, user_id: int | None, collection_ids: Sequence[str],
                        tools: Sequence[RunTool]) -> list[RunTool]:
    """The turn's tools (``tools``, the agent's) with the one for the session's collections after them."""
    if not collection_ids or user_id is None:
        return list(tools)
    found = await attached(db, user_id=user_id, collection_ids=collection_ids)
    if not found:
        return list(tools)
    return [*tools, _tool(tuple(found), _free_name({t.name for t in tools}))]


def _free_name(taken: set[str]) -> str:
    name, n = TOOL_NAME, 1
    while name in taken:
        n += 1
        name = f"{TOOL_NAME}_{n}"
    return name


@lru_cache(maxsize=256)
def _tool(collections: tuple[tuple[str, str], ...], name: str) -> RunTool:
    """Kept per set of collections (and name): its description and input schema are built once."""
    config = OwnConfig(collection_ids=[i for i, _ in collections], names=[n for _, n in collections])
    return RunTool(id=f"session-knowledge:{name}", name=name, title=TOOL_TYPE.name,
                   description=TOOL_TYPE.describe(config), type=TOOL_TYPE, config=config, needs_approval=False)
