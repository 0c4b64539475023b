"""HTTP API of the MCP servers (admins only; 403 ``admin_required`` for others).

- ``GET  /api/admin/mcp-servers`` – the servers (``McpServerRead``: ``id, slug, name, transport, url,
  headers, command, args, env, secretSet, network, enabled, serverInfo, lastError, refreshedAt,
  toolCount, createdAt, updatedAt``; header and env values come back as ``"•••"``).
- ``POST /api/admin/mcp-servers`` – add one: ``{slug, name, transport: "http" | "stdio", url?, headers?,
  command?, args?, env?, secret?, network?, enabled?}`` → 201. 422 when an http server has no URL or a
  stdio server no command; 409 ``mcp_server_slug_taken``.
- ``GET/PUT/DELETE /api/admin/mcp-servers/{id}`` – read, partial update (write-only values: see
  ``tools.mcp.schemas``), delete (204; the server's tools go too, and with them their agent links).
- ``POST /api/admin/mcp-servers/{id}/refresh`` – list the server's tools now and bring its tool rows in
  line; answers the tools (``McpToolRead``: ``toolId, slug, name, title, description, inputSchema,
  annotations, enabled, adminOnly, needsApproval, missing, changed``). 502 ``mcp_server_failed`` with the reason when
  the server cannot be reached or refuses; 502 ``mcp_server_too_many_tools`` when it lists more than
  ``AGENTLOFT_MCP_MAX_TOOLS`` tools (nothing is changed).
- ``GET /api/admin/mcp-servers/{id}/tools`` – the same list as stored, without asking the server.

Each tool is an ``agent_tools`` row of type ``mcp``: enable it, make it admin-only, require approval and
attach it to agents through the tool API, as any other tool.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from agentloft.auth.dependencies import AdminUser
from agentloft.core.dependencies import DbSession, Paging, Rt
from agentloft.core.schemas import Page
from agentloft.tools.mcp import service
from agentloft.tools.mcp.schemas import McpServerCreate, McpServerRead, McpServerUpdate, McpToolRead

admin_router = APIRouter(prefix="/api/admin/mcp-servers", tags=["admin"])


@admin_router.get("", response_model=Page[McpServerRead])
async def list_servers(_: AdminUser, db: DbSession, paging: Paging) -> Page[McpServerRead]:
    rows, total = await service.list_servers(db=db, page=paging)
    counts = await service.tool_counts(db=db)
    return Page[McpServerRead].of([service.to_read(row=r, tool_count=counts.get(r.id, 0)) for r in rows], total, paging)


@admin_router.post("", response_model=McpServerRead, status_code=201)
async def create_server(body: McpServerCreate, _: AdminUser, rt: Rt, db: DbSession) -> McpServerRead:
    return service.to_read(row=await service.create_server(db=db, rt=rt, data=body))


@admin_router.get("/{server_id}", response_model=McpServerRead)
async def read_server(server_id: str, _: AdminUser, db: DbSession) -> McpServerRead:
    row = await service.get_server(db=db, server_id=server_id)
    return service.to_read(row=row, tool_count=(await service.tool_counts(db=db)).get(row.id, 0))


@admin_router.put("/{server_id}", response_model=McpServerRead)
async def update_server(server_id: str, body: McpServerUpdate, _: AdminUser, rt: Rt, db: DbSession) -> McpServerRead:
    row = await service.update_server(db=db, rt=rt, server_id=server_id, data=body)
    return service.to_read(row=row, tool_count=(await service.tool_counts(db=db)).get(row.id, 0))


@admin_router.delete("/{server_id}", status_code=204)
async def delete_server(server_id: str, _: AdminUser, rt: Rt, db: DbSession) -> Response:
    await service.delete_server(db=db, rt=rt, server_id=server_id)
    return Response(status_code=204)


@admin_router.post("/{server_id}/refresh", response_model=Page[McpToolRead])
async def refresh_server(server_id: str, _: AdminUser, rt: Rt) -> Page[McpToolRead]:
    return Page[McpToolRead].whole(await service.refresh_server(rt=rt, server_id=server_id))


@admin_router.get("/{server_id}/tools", response_model=Page[McpToolRead])
async def server_tools(server_id: str, _: AdminUser, db: DbSession) -> Page[McpToolRead]:
    return Page[McpToolRead].whole(await service.list_server_tools(db=db, server_id=server_id))
