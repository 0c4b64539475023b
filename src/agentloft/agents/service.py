"""Agents: admin CRUD and the enabled-agent lookups users and the chat engine rely on."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents.models import Agent
from agentloft.agents.schemas import AgentCreate, AgentUpdate
from agentloft.core.errors import Conflict, Invalid, NotFound
from agentloft.core.schemas import PageParams
from agentloft.llm import service as llm_service


async def _check_model(db: AsyncSession, model_id: int | None) -> None:
    if model_id is None:
        return
    try:
        await llm_service.get_model(db=db, model_id=model_id)
    except NotFound as exc:
        raise Invalid("modelId: no such model", fields={"modelId": "no such model"}) from exc


async def _slug_taken(db: AsyncSession, slug: str, except_id: int | None = None) -> bool:
    stmt = select(Agent.id).where(Agent.slug == slug)
    if except_id is not None:
        stmt = stmt.where(Agent.id != except_id)
    return (await db.execute(stmt)).first() is not None


def _conflict(slug: str) -> Conflict:
    return Conflict(f"an agent with slug '{slug}' exists", code="agent_slug_taken")


async def create_agent(*, db: AsyncSession, data: AgentCreate) -> Agent:
    await _check_model(db, data.model_id)
    if await _slug_taken(db, data.slug):
        raise _conflict(data.slug)
    row = Agent(**data.model_dump())
    db.add(row)
    try:
        await db.flush()
    except IntegrityError as exc:
        raise _conflict(data.slug) from exc
    return row


async def get_agent(*, db: AsyncSession, agent_id: int) -> Agent:
    row = await db.get(Agent, agent_id)
    if row is None:
        raise NotFound("agent not found", code="agent_not_found")
    return row


async def list_agents(
    *, db: AsyncSession, page: PageParams, enabled_only: bool = False
) -> tuple[list[Agent], int]:
    base = select(Agent)
    if enabled_only:
        base = base.where(Agent.enabled.is_(True))
    total = int((await db.execute(select(func.count()).select_from(base.subquery()))).scalar_one())
    stmt = base.order_by(Agent.name, Agent.id).offset(page.offset).limit(page.page_size)
    return list((await db.execute(stmt)).scalars()), total


async def get_enabled_agent_by_slug(*, db: AsyncSession, slug: str) -> Agent:
    """The agent users may chat with; a disabled one is 'not found' to them."""
    stmt = select(Agent).where(Agent.slug == slug, Agent.enabled.is_(True))
    row = (await db.execute(stmt)).scalar_one_or_none()
    if row is None:
        raise NotFound(f"agent '{slug}' not found", code="agent_not_found")
    return row


async def update_agent(*, db: AsyncSession, agent_id: int, data: AgentUpdate) -> Agent:
    row = await get_agent(db=db, agent_id=agent_id)
    changes = data.model_dump(exclude_unset=True)
    if "model_id" in changes:
        await _check_model(db, changes["model_id"])
    if changes.get("slug") and await _slug_taken(db, changes["slug"], except_id=row.id):
        raise _conflict(changes["slug"])
    for field, value in changes.items():
        if value is not None or field == "model_id":
            setattr(row, field, value)
    await db.flush()
    return row


async def delete_agent(*, db: AsyncSession, agent_id: int) -> None:
    row = await get_agent(db=db, agent_id=agent_id)
    await db.delete(row)
    await db.flush()
