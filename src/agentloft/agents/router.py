"""Agents: admin CRUD under /api/admin/agents; the enabled list for every signed-in user.

Creating or updating an agent answers with ``warnings`` (e.g. its prompt names an admin-only tool), and
``POST /api/admin/agents/prompt-check`` gives the same warnings for a prompt being typed.

Remote agents: ``POST``/``PUT`` take ``kind: "remote"``, ``cardUrl`` and a write-only ``remoteToken``
(answers carry ``remoteTokenSet``, the fetched ``card``, ``cardFetchedAt`` and ``cardError``);
``POST /api/admin/agents/{id}/card/refresh`` fetches the card again. Users chat with local agents only.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Response

from agentloft.a2a import remote as a2a_remote
from agentloft.agents import service
from agentloft.agents.models import Agent
from agentloft.agents.schemas import (
    AgentCreate,
    AgentPublic,
    AgentRead,
    AgentSaved,
    AgentUpdate,
    PromptCheck,
    PromptWarnings,
)
from agentloft.auth.dependencies import AdminUser
from agentloft.core.dependencies import DbSession, Paging, Rt
from agentloft.core.runtime import Runtime
from agentloft.core.schemas import DbInt, Page
from agentloft.groups import access
from agentloft.groups.dependencies import CallerViewer
from agentloft.tools import service as tools_service

router = APIRouter(prefix="/api/agents", tags=["agents"])
admin_router = APIRouter(prefix="/api/admin/agents", tags=["admin"])


@router.get("", response_model=Page[AgentPublic])
async def list_enabled(viewer: CallerViewer, db: DbSession, paging: Paging) -> Page[AgentPublic]:
    rows, total = await service.list_agents(db=db, page=paging, enabled_only=True, viewer=viewer)
    return Page[AgentPublic].of([AgentPublic.model_validate(r) for r in rows], total, paging)


@router.get("/{slug}", response_model=AgentPublic)
async def read_enabled(slug: str, viewer: CallerViewer, db: DbSession) -> AgentPublic:
    return AgentPublic.model_validate(await service.get_enabled_agent_by_slug(db=db, slug=slug, viewer=viewer))


async def _reads(db: DbSession, rows: list[Agent]) -> list[AgentRead]:
    groups = await access.groups_of(db=db, kind="agent", ids=[r.id for r in rows])
    return [AgentRead.model_validate(r).model_copy(update={"group_ids": groups[r.id]}) for r in rows]


@admin_router.get("", response_model=Page[AgentRead])
async def admin_list(_: AdminUser, db: DbSession, paging: Paging) -> Page[AgentRead]:
    rows, total = await service.list_agents(db=db, page=paging)
    return Page[AgentRead].of(await _reads(db, rows), total, paging)


async def _saved(db: DbSession, agent: Agent) -> AgentSaved:
    warnings = await tools_service.prompt_warnings(db=db, prompt=agent.system_prompt)
    groups = await access.groups_of(db=db, kind="agent", ids=[agent.id])
    return AgentSaved.model_validate(agent).model_copy(update={"warnings": warnings, "group_ids": groups[agent.id]})


def _card_fetcher(rt: Runtime) -> service.CardFetcher:
    """Remote agents' cards are fetched by the A2A domain (protocol and network guard)."""

    async def fetch(url: str, token: str | None) -> tuple[dict[str, Any] | None, str | None]:
        return await a2a_remote.fetch_card(rt, url, token)

    return fetch


@admin_router.post("", response_model=AgentSaved, status_code=201)
async def admin_create(body: AgentCreate, _: AdminUser, rt: Rt, db: DbSession) -> AgentSaved:
    return await _saved(db, await service.create_agent(db=db, data=body, box=rt.box, fetch_card=_card_fetcher(rt)))


@admin_router.post("/prompt-check", response_model=PromptWarnings)
async def admin_prompt_check(body: PromptCheck, _: AdminUser, db: DbSession) -> PromptWarnings:
    return PromptWarnings(warnings=await tools_service.prompt_warnings(db=db, prompt=body.system_prompt))


@admin_router.get("/{agent_id}", response_model=AgentRead)
async def admin_read(agent_id: DbInt, _: AdminUser, db: DbSession) -> AgentRead:
    (read,) = await _reads(db, [await service.get_agent(db=db, agent_id=agent_id)])
    return read


@admin_router.put("/{agent_id}", response_model=AgentSaved)
async def admin_update(agent_id: DbInt, body: AgentUpdate, _: AdminUser, rt: Rt, db: DbSession) -> AgentSaved:
    row = await service.update_agent(db=db, agent_id=agent_id, data=body, box=rt.box, fetch_card=_card_fetcher(rt))
    return await _saved(db, row)


@admin_router.post("/{agent_id}/card/refresh", response_model=AgentRead)
async def admin_refresh_card(agent_id: DbInt, _: AdminUser, rt: Rt, db: DbSession) -> AgentRead:
    """Fetch a remote agent's card again; ``cardError`` says why when it cannot be fetched."""
    row = await service.store_card(db=db, agent_id=agent_id, box=rt.box, fetch_card=_card_fetcher(rt))
    (read,) = await _reads(db, [row])
    return read


@admin_router.delete("/{agent_id}", status_code=204)
async def admin_delete(agent_id: DbInt, _: AdminUser, db: DbSession) -> Response:
    await service.delete_agent(db=db, agent_id=agent_id)
    return Response(status_code=204)
