"""HTTP API of the tool system. All list answers have the shape ``{items, total, page, pageSize, hasMore}``
and take ``?page=&pageSize=`` (pageSize ≤ 100); errors are ``{"error": {code, message, fields?}}``.

Admins only (403 ``admin_required`` for others, 401 when not signed in):

- ``GET  /api/agent-tools/types`` – registered tool types: ``slug, name, description, configSchema``
  (JSON Schema of the type's config: drives the form), ``inputSchema`` (what the model fills),
  ``defaults`` (a new tool's config), ``secretFields``, ``defaultNeedsApproval``, ``defaultAdminOnly``,
  ``creatable`` (false for types whose tools are not created by hand: ``mcp`` tools come from an MCP
  server's refresh).
- ``GET  /api/agent-tools`` – tools (``AgentToolRead``: ``id, slug, name, description, type, config,
  secretsSet, enabled, needsApproval, adminOnly, unavailable, createdAt, updatedAt``), by name.
  ``unavailable`` says why a tool cannot run now although it may be enabled (its MCP server is
  disabled); such a tool reaches no model and no chat listing until that changes.
- ``POST /api/agent-tools`` – create: ``{slug, name, description?, type, config?, enabled?,
  needsApproval?, adminOnly?}`` → 201. Omitted ``needsApproval``/``adminOnly`` take the type's defaults.
  422 with ``fields`` such as ``{"config.timeoutMs": "..."}`` when the config does not fit the type, or
  ``{"type": ...}`` for an unknown type; 422 ``tool_type_not_creatable`` for a type that is not created
  by hand (``mcp``; nor may an update turn a tool into one); 409 ``tool_slug_taken`` for a slug in use.
  ``groupIds`` limits who may use the tool; ``approverGroupIds`` names the groups whose members answer its
  calls that wait for approval instead of the person chatting (``chat.approvals``); 422 for an unknown group.
- ``GET/PUT/DELETE /api/agent-tools/{id}`` – read, partial update (same fields, all optional; a given
  ``config`` replaces the stored one), delete (204; the tool leaves every agent too).
- ``POST /api/agent-tools/{id}/execute`` ``{input, approved?}`` – run the tool now (debug panel) as the
  admin, even when disabled; answers the ``ToolResult`` ``{success, data, error, metadata}`` with
  ``metadata.durationMs``. Bad input is a failed result, not an HTTP error. ``approved`` (default false)
  is the admin's confirmation: a call that needs approval (the tool's setting, or its type for this
  input, e.g. the document tool's delete) answers ``success: false`` with ``metadata.needsApproval``
  and does nothing until it is sent again with ``approved: true``.
- ``GET /api/admin/agents/{id}/tools`` – the agent's tools in order: ``toolId, needsApproval`` (the
  agent's override, null = inherit), ``position, effectiveNeedsApproval, slug, name, type, enabled,
  adminOnly``. ``PUT`` with a JSON list ``[{toolId, needsApproval?, position?}]`` replaces the list and
  answers like ``GET``; an unknown or repeated tool id is 422 with ``fields`` ``{"<index>.toolId": ...}``.

Secrets: a type's ``secretFields`` are stored encrypted and never returned: ``config`` leaves them out and
``secretsSet`` names the ones holding a value. On create/update a secret that is absent, null or
``"•••"`` keeps the stored value, an empty value (``""``, ``{}``, ``[]``) removes it, anything else
replaces it.

Any signed-in user:

- ``GET /api/llm/chat/tools`` – exactly the tools the caller's model sees in plain LLM chat: ``name``
  (the tool slug, the function name), ``description``, ``inputSchema``, plus ``id``, ``title`` (the
  tool's name for people) and ``needsApproval``. Disabled tools (and those whose MCP server is disabled)
  never appear; admin-only tools appear for admins only (seed 001). ``?agent=<slug>`` lists what the
  model sees when the caller chats with that enabled agent instead (its tools, in its order, with its
  approval overrides; 404 for an unknown or disabled agent).
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from fastapi import APIRouter, Query, Response

from agentloft.auth.dependencies import AdminUser, CurrentUser
from agentloft.core.dependencies import DbSession, Paging, Rt
from agentloft.core.schemas import DbInt, Page, PageParams
from agentloft.groups.dependencies import CallerViewer
from agentloft.tools import loading, service
from agentloft.tools.base import ToolResult
from agentloft.tools.dependencies import Registry
from agentloft.tools.schemas import (
    AgentToolCreate,
    AgentToolLinkIn,
    AgentToolLinkRead,
    AgentToolRead,
    AgentToolUpdate,
    ExecuteRequest,
    LlmToolRead,
    ToolTypeRead,
)

router = APIRouter(tags=["tools"])
admin_router = APIRouter(tags=["admin"])


T = TypeVar("T")


def _slice(items: list[T], paging: PageParams) -> list[T]:
    return items[paging.offset : paging.offset + paging.page_size]


@router.get("/api/llm/chat/tools", response_model=Page[LlmToolRead])
async def chat_tools(
    user: CurrentUser, viewer: CallerViewer, rt: Rt, db: DbSession, paging: Paging,
    agent: Annotated[str | None, Query()] = None,
) -> Page[LlmToolRead]:
    tools = await loading.tools_for_chat(db=db, rt=rt, user_id=user.id, user_role=user.role, agent_slug=agent,
                                         group_ids=viewer.group_ids)
    items = [
        LlmToolRead(
            name=t.name, description=t.description, input_schema=t.input_schema,
            id=t.id, title=t.title, needs_approval=t.needs_approval,
        )
        for t in tools
    ]
    return Page[LlmToolRead].of(_slice(items, paging), len(items), paging)


@admin_router.get("/api/agent-tools/types", response_model=Page[ToolTypeRead])
async def list_types(_: AdminUser, registry: Registry, paging: Paging) -> Page[ToolTypeRead]:
    items = service.list_types(registry=registry)
    return Page[ToolTypeRead].of(_slice(items, paging), len(items), paging)


@admin_router.get("/api/agent-tools", response_model=Page[AgentToolRead])
async def list_tools(_: AdminUser, rt: Rt, db: DbSession, paging: Paging) -> Page[AgentToolRead]:
    rows, total = await service.list_tools(db=db, page=paging)
    return Page[AgentToolRead].of(await service.read_tools(db=db, registry=rt.registry, rows=rows), total, paging)


@admin_router.post("/api/agent-tools", response_model=AgentToolRead, status_code=201)
async def create_tool(body: AgentToolCreate, _: AdminUser, rt: Rt, db: DbSession) -> AgentToolRead:
    row = await service.create_tool(db=db, rt=rt, data=body)
    return await service.read_tool(db=db, registry=rt.registry, row=row)


@admin_router.get("/api/agent-tools/{tool_id}", response_model=AgentToolRead)
async def read_tool(tool_id: str, _: AdminUser, rt: Rt, db: DbSession) -> AgentToolRead:
    row = await service.get_tool(db=db, tool_id=tool_id)
    return await service.read_tool(db=db, registry=rt.registry, row=row)


@admin_router.put("/api/agent-tools/{tool_id}", response_model=AgentToolRead)
async def update_tool(
    tool_id: str, body: AgentToolUpdate, _: AdminUser, rt: Rt, db: DbSession
) -> AgentToolRead:
    row = await service.update_tool(db=db, rt=rt, tool_id=tool_id, data=body)
    return await service.read_tool(db=db, registry=rt.registry, row=row)


@admin_router.delete("/api/agent-tools/{tool_id}", status_code=204)
async def delete_tool(tool_id: str, _: AdminUser, db: DbSession) -> Response:
    await service.delete_tool(db=db, tool_id=tool_id)
    return Response(status_code=204)


@admin_router.post("/api/agent-tools/{tool_id}/execute", response_model=ToolResult)
async def execute_tool(
    tool_id: str, body: ExecuteRequest, admin: AdminUser, rt: Rt, db: DbSession
) -> ToolResult:
    return await service.execute_tool(
        db=db, rt=rt, tool_id=tool_id, user_id=admin.id, user_role=admin.role, input=body.input,
        approved=body.approved,
    )


@admin_router.get("/api/admin/agents/{agent_id}/tools", response_model=Page[AgentToolLinkRead])
async def agent_tools(agent_id: DbInt, _: AdminUser, db: DbSession) -> Page[AgentToolLinkRead]:
    return Page[AgentToolLinkRead].whole(await service.list_agent_tools(db=db, agent_id=agent_id))


@admin_router.put("/api/admin/agents/{agent_id}/tools", response_model=Page[AgentToolLinkRead])
async def set_agent_tools(
    agent_id: DbInt, body: list[AgentToolLinkIn], _: AdminUser, db: DbSession
) -> Page[AgentToolLinkRead]:
    return Page[AgentToolLinkRead].whole(await service.set_agent_tools(db=db, agent_id=agent_id, links=body))
