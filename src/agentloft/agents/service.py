"""Agents: admin CRUD and the enabled-agent lookups users and the chat engine rely on.

Remote agents (``kind='remote'``) are rows too: their bearer token is stored encrypted and never returned,
and their card is fetched by whoever calls create/update (``fetch_card``: the A2A domain's, which knows
the protocol and the network guard), before anything is written. Users chat only with local agents.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents.models import LOCAL, REMOTE, Agent
from agentloft.agents.schemas import AgentCreate, AgentUpdate
from agentloft.core.crypto import SecretBox
from agentloft.core.db import one_or_404, utcnow, value_taken
from agentloft.core.errors import Conflict, Invalid, NotFound, problem
from agentloft.core.schemas import PageParams
from agentloft.groups import access
from agentloft.llm import service as llm_service

# (card URL, bearer token) -> (the card as JSON, or None and why not)
CardFetcher = Callable[[str, str | None], Awaitable[tuple[dict[str, Any] | None, str | None]]]


async def _check_model(db: AsyncSession, model_id: int | None) -> None:
    await llm_service.check_kind(db=db, model_id=model_id, kind="chat", field="modelId",
                                 message="an agent runs on a chat model, not an embedding model")


async def _slug_taken(db: AsyncSession, slug: str, except_id: int | None = None) -> bool:
    return await value_taken(db, Agent.slug, slug, id_column=Agent.id, except_id=except_id)


def _conflict(slug: str) -> Conflict:
    return Conflict(f"an agent with slug '{slug}' exists", code="agent_slug_taken",
                    fields={"slug": problem("slug_taken", "taken")})


def remote_token(*, row: Agent, box: SecretBox) -> str | None:
    """The stored bearer token of a remote agent (None when unset or no longer decryptable)."""
    if not row.remote_token_enc:
        return None
    try:
        return box.decrypt(row.remote_token_enc)
    except ValueError:
        return None


def _set_token(row: Agent, box: SecretBox | None, token: str | None) -> None:
    if token is None:
        return
    if token and box is None:
        raise ValueError("a SecretBox is needed to store a remote agent's token")
    row.remote_token_enc = box.encrypt(token) if token and box is not None else None


async def _store_card(row: Agent, fetch_card: CardFetcher | None, box: SecretBox | None) -> None:
    if row.kind != REMOTE or fetch_card is None or not row.card_url:
        return
    card, error = await fetch_card(row.card_url, remote_token(row=row, box=box) if box else None)
    row.card_error = error
    if card is not None:
        row.card = card
        row.card_fetched_at = utcnow()


async def create_agent(
    *, db: AsyncSession, data: AgentCreate, box: SecretBox | None = None, fetch_card: CardFetcher | None = None
) -> Agent:
    await _check_model(db, data.model_id)
    if await _slug_taken(db, data.slug):
        raise _conflict(data.slug)
    group_ids = await access.check_group_ids(db=db, group_ids=data.group_ids)
    row = Agent(**data.model_dump(exclude={"remote_token", "group_ids"}))
    _set_token(row, box, data.remote_token)
    await _store_card(row, fetch_card, box)
    db.add(row)
    try:
        await db.flush()
    except IntegrityError as exc:
        raise _conflict(data.slug) from exc
    await access.set_groups(db=db, kind="agent", resource_id=row.id, group_ids=group_ids)
    return row


async def get_agent(*, db: AsyncSession, agent_id: int) -> Agent:
    return await one_or_404(db, select(Agent).where(Agent.id == agent_id),
                            NotFound("agent not found", code="agent_not_found"))


async def list_agents(
    *, db: AsyncSession, page: PageParams, enabled_only: bool = False, viewer: access.Viewer | None = None
) -> tuple[list[Agent], int]:
    """A page of agents; ``enabled_only``: those users may chat with, and of those only the ones
    ``viewer`` may use (``groups.access``) when given."""
    base = select(Agent)
    if enabled_only:  # what users may chat with
        base = base.where(Agent.enabled.is_(True), Agent.kind == LOCAL)
    if viewer is not None:
        base = base.where(access.allowed("agent", Agent.id, viewer))
    total = int((await db.execute(select(func.count()).select_from(base.subquery()))).scalar_one())
    stmt = base.order_by(Agent.name, Agent.id).offset(page.offset).limit(page.page_size)
    return list((await db.execute(stmt)).scalars()), total


def agent_not_found(slug: str) -> NotFound:
    return NotFound(f"agent '{slug}' not found", code="agent_not_found")


async def get_enabled_agent_by_slug(*, db: AsyncSession, slug: str, viewer: access.Viewer | None = None,
                                    limits: access.Limits | None = None) -> Agent:
    """The agent users may chat with; a disabled one (or a remote one, which only agents call), or one
    ``viewer`` may not use (when given), is 'not found' to them."""
    stmt = select(Agent).where(Agent.slug == slug, Agent.enabled.is_(True), Agent.kind == LOCAL)
    agent = await one_or_404(db, stmt, agent_not_found(slug))
    if viewer is not None:
        limits = limits if limits is not None else await access.load_limits(db=db, viewer=viewer)
        if not limits.allows(viewer, "agent", agent.id):
            raise agent_not_found(slug)
    return agent


async def update_agent(
    *, db: AsyncSession, agent_id: int, data: AgentUpdate, box: SecretBox | None = None,
    fetch_card: CardFetcher | None = None,
) -> Agent:
    """Partial update. A remote agent's card is fetched again when its URL or token changed."""
    row = await get_agent(db=db, agent_id=agent_id)
    changes = data.model_dump(exclude_unset=True)
    token = changes.pop("remote_token", None)
    group_ids = changes.pop("group_ids", None)
    if group_ids is not None:
        await access.set_groups(db=db, kind="agent", resource_id=row.id, group_ids=group_ids)
    if "model_id" in changes:
        await _check_model(db, changes["model_id"])
    if changes.get("slug") and await _slug_taken(db, changes["slug"], except_id=row.id):
        raise _conflict(changes["slug"])
    reach = (row.kind, row.card_url, row.remote_token_enc)
    for field, value in changes.items():
        if value is not None or field == "model_id":
            setattr(row, field, value)
    _set_token(row, box, token)
    if row.kind == REMOTE and not row.card_url:
        raise Invalid("cardUrl: a remote agent needs the URL of its agent card",
                      fields={"cardUrl": problem("required_for_remote_agent", "required for a remote agent")})
    if (row.kind, row.card_url, row.remote_token_enc) != reach:
        await _store_card(row, fetch_card, box)
    await db.flush()
    return row


async def store_card(
    *, db: AsyncSession, agent_id: int, box: SecretBox, fetch_card: CardFetcher
) -> Agent:
    """Fetch a remote agent's card again (the admin's refresh)."""
    row = await get_agent(db=db, agent_id=agent_id)
    if row.kind != REMOTE:
        raise Invalid("only a remote agent has a card to fetch", code="not_a_remote_agent")
    await _store_card(row, fetch_card, box)
    await db.flush()
    return row


async def delete_agent(*, db: AsyncSession, agent_id: int) -> None:
    row = await get_agent(db=db, agent_id=agent_id)
    await db.delete(row)
    await db.flush()
