"""What loads the tools a run may use: the lists of ``RunTool`` a turn gets, and nothing else (seed 001).

Visibility is decided here and only here. The chat engine (and A2A through it) receives the list these
functions return and can call nothing else, so an admin-only or disabled tool is not merely refused for a
non-admin: it does not exist in that run. The rule (``visible_to``) follows seed 001: enabled tools, minus
admin-only ones unless the role is ``admin``, filtered in memory because the table is small. A tool its
type reports unavailable (``ToolType.unavailable``: an MCP tool whose server is disabled) is left out too.
A tool limited to groups (``groups.access``) is left out the same way for a caller in none of them: the
callers pass the user's group ids (``group_ids``) and may pass the ``Limits`` they read already.

Apart from the admin's CRUD (``tools.service``) because every turn runs this and no edit does: what it
needs to be fast (one ``RunTool`` per row version, ``build_run_tool``) and to be right (one visibility
rule for chat, regenerate, agent-invoke, A2A and the OpenAI-compatible API) is easier to see alone.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents import service as agents_service
from agentloft.agents.models import Agent
from agentloft.core.crypto import SecretBox
from agentloft.core.runtime import Runtime
from agentloft.groups import access
from agentloft.tools import config as tool_config
from agentloft.tools.base import AnyToolType, Hidden
from agentloft.tools.models import AgentTool, AgentToolAssociation
from agentloft.tools.registry import ToolRegistry
from agentloft.tools.runner import DEFAULT_TIMEOUT_S, RunTool
from agentloft.tools.schemas import ToolInfo

log = logging.getLogger(__name__)

# Extra seconds the wrapper allows beyond a type's own configured timeout, so the type reports its
# own (clearer) timeout message first.
TIMEOUT_GRACE_S = 5.0


async def unavailable_reasons(
    *, db: AsyncSession, registry: ToolRegistry, rows: Iterable[AgentTool]
) -> dict[str, str]:
    """Why some of ``rows`` cannot run now although they may be enabled, by tool id (each type answers
    for its own rows, ``ToolType.unavailable``)."""
    by_type: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_type.setdefault(row.type, {})[row.id] = dict(row.config or {})
    reasons: dict[str, str] = {}
    for slug, configs in by_type.items():
        tool_type = registry.get(slug)
        if tool_type is not None:
            reasons.update(await tool_type.unavailable(db=db, configs=configs))
    return reasons


def visible_to(*, row: AgentTool, viewer: access.Viewer, limits: access.Limits) -> bool:
    """Seed 001: enabled tools; admin-only ones only for admins; one limited to groups only for their
    members (and admins). Anyone else never learns they exist."""
    return (bool(row.enabled) and (not row.admin_only or viewer.sees_all)
            and limits.allows(viewer, "tool", row.id))


async def _limits(db: AsyncSession, viewer: access.Viewer, limits: access.Limits | None) -> access.Limits:
    return limits if limits is not None else await access.load_limits(db=db, viewer=viewer)


async def _hidden(db: AsyncSession, viewer: access.Viewer, limits: access.Limits) -> Hidden:
    """What the viewer may not use, for ``ToolType.for_caller``: the slugs of the agents and the ids of the
    knowledge collections limited to groups they are in none of (no statement when no agent is)."""
    collections = frozenset(str(i) for i, groups in limits.groups.get("collection", {}).items()
                            if not viewer.may_use(groups))
    ids = [i for i, groups in limits.groups.get("agent", {}).items() if not viewer.may_use(groups)]
    if not ids:
        return Hidden(collections=collections)
    agents = frozenset((await db.execute(select(Agent.slug).where(Agent.id.in_(ids)))).scalars())
    return Hidden(agents=agents, collections=collections)


def _for_caller(tool: RunTool | None, row: AgentTool, hidden: Hidden) -> RunTool | None:
    """``tool`` as a caller gets it from whom ``hidden`` is hidden (``ToolType.for_caller``): its config and
    description without those, or None when nothing is left for that caller."""
    if tool is None or not hidden:
        return tool
    config = tool.type.for_caller(tool.config, hidden)
    if config is None or config is tool.config:
        return None if config is None else tool
    return replace(tool, config=config, description=_llm_description(row, tool.type, config))


def _llm_description(row: AgentTool, tool_type: AnyToolType, config: BaseModel) -> str:
    """The type's description of this config, preceded by the admin's own words for the tool (which say
    what this instance is for, e.g. 'the company wiki'), when there are any."""
    try:
        described = tool_type.describe(config).strip()
    except Exception:
        log.exception("describe() failed for tool %s (%s)", row.slug, row.type)
        described = tool_type.description
    own = (row.description or "").strip()
    return f"{own}\n\n{described}" if own and own not in described else described


def _timeout_s(config: BaseModel) -> float:
    """The wrapper's time limit: the type's own configured timeout plus a grace, or the default."""
    for attr, scale in (("timeout_ms", 1000.0), ("timeout_seconds", 1.0), ("timeout_s", 1.0)):
        value = getattr(config, attr, None)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return value / scale + TIMEOUT_GRACE_S
    return DEFAULT_TIMEOUT_S


@dataclass(frozen=True)
class _RowVersion:
    """The columns of a tool row that a ``RunTool`` is built from, config and secrets as canonical JSON:
    two reads of an unchanged row give equal versions, any edit that reaches the model gives another."""

    id: str
    slug: str
    name: str
    description: str
    config: str
    secrets: str
    audit_arguments: bool = False

    @classmethod
    def of(cls, row: AgentTool) -> _RowVersion:
        return cls(id=row.id, slug=row.slug, name=row.name, description=row.description or "",
                   config=json.dumps(row.config or {}, sort_keys=True),
                   secrets=json.dumps(row.secrets_enc or {}, sort_keys=True),
                   audit_arguments=bool(row.audit_arguments))


def build_run_tool(
    *, row: AgentTool, rt: Runtime, needs_approval: bool | None = None
) -> RunTool | None:
    """A row as a run sees it, or None (and a log line) if it cannot run: its type is not registered
    (an add-on was removed) or its stored config no longer fits. A broken tool must not break a chat.

    The same row version (with the same type, secret key and approval rule) gives the same ``RunTool``
    object, so its decrypted config, description and input schema are built once per edit of the row
    instead of once per turn (on PostgreSQL, where the read cache is off, every turn reads the rows)."""
    tool_type = rt.registry.get(row.type)
    if tool_type is None:
        log.warning("tool %s has unknown type %r; left out", row.slug, row.type)
        return None
    approval = row.needs_approval if needs_approval is None else needs_approval
    return _built(tool_type=tool_type, box=rt.box, version=_RowVersion.of(row), needs_approval=approval)


@lru_cache(maxsize=1024)
def _built(*, tool_type: AnyToolType, box: SecretBox, version: _RowVersion, needs_approval: bool) -> RunTool | None:
    """``build_run_tool`` for one row version (kept: the key holds everything the result depends on)."""
    row = AgentTool(id=version.id, slug=version.slug, name=version.name, description=version.description,
                    type=tool_type.slug, config=json.loads(version.config), secrets_enc=json.loads(version.secrets))
    try:
        config = tool_config.parse_stored_config(row=row, tool_type=tool_type, box=box)
    except (ValidationError, ValueError) as exc:
        log.warning("tool %s has a config its type refuses (%s); left out", row.slug, exc)
        return None
    return RunTool(
        id=row.id,
        name=row.slug,
        title=row.name,
        description=_llm_description(row, tool_type, config),
        type=tool_type,
        config=config,
        needs_approval=needs_approval,
        timeout_s=_timeout_s(config),
        audit_arguments=version.audit_arguments,
    )


async def _enabled_rows(db: AsyncSession) -> list[AgentTool]:
    stmt = select(AgentTool).where(AgentTool.enabled.is_(True)).order_by(AgentTool.slug)
    return list((await db.execute(stmt)).scalars())


async def _visible_rows(db: AsyncSession, registry: ToolRegistry, viewer: access.Viewer,
                        limits: access.Limits | None) -> list[AgentTool]:
    """Enabled rows this caller may see whose type can run them now."""
    limits = await _limits(db, viewer, limits)
    rows = [row for row in await _enabled_rows(db) if visible_to(row=row, viewer=viewer, limits=limits)]
    unavailable = await unavailable_reasons(db=db, registry=registry, rows=rows)
    return [row for row in rows if row.id not in unavailable]


async def get_enabled_tools_for_llm(
    *, db: AsyncSession, rt: Runtime, user_id: int | None, user_role: str | None,
    group_ids: frozenset[int] = frozenset(), limits: access.Limits | None = None,
) -> list[RunTool]:
    """Every enabled tool this caller may see (seed 001's ``getEnabledToolsForLlm``), ready to run.
    ``user_id`` is part of the seed's signature; visibility depends on the role and the groups."""
    viewer = access.Viewer(role=user_role, group_ids=group_ids)
    limits = await _limits(db, viewer, limits)
    hidden = await _hidden(db, viewer, limits)
    tools = [_for_caller(build_run_tool(row=row, rt=rt), row, hidden)
             for row in await _visible_rows(db, rt.registry, viewer, limits)]
    return [t for t in tools if t is not None]


async def get_enabled_tool_infos(
    *, db: AsyncSession, user_role: str | None, registry: ToolRegistry, group_ids: frozenset[int] = frozenset()
) -> list[ToolInfo]:
    """Seed 001's ``getEnabledToolInfos``: the same filter, without configs. Rows whose type is not
    registered are left out too, as they are from the model's list."""
    viewer = access.Viewer(role=user_role, group_ids=group_ids)
    rows = [row for row in await _visible_rows(db, registry, viewer, None) if row.type in registry]
    return [
        ToolInfo(
            id=row.id,
            slug=row.slug,
            name=row.name,
            description=row.description,
            type=row.type,
            needs_approval=row.needs_approval,
            admin_only=bool(row.admin_only),
        )
        for row in rows
    ]


async def agent_links(*, db: AsyncSession, agent_id: int) -> list[tuple[AgentToolAssociation, AgentTool]]:
    stmt = (
        select(AgentToolAssociation, AgentTool)
        .join(AgentTool, AgentTool.id == AgentToolAssociation.tool_id)
        .where(AgentToolAssociation.agent_id == agent_id)
        .order_by(AgentToolAssociation.position, AgentToolAssociation.id)
    )
    return [(link, tool) for link, tool in (await db.execute(stmt)).all()]


def effective_needs_approval(*, link: AgentToolAssociation, tool: AgentTool) -> bool:
    """The agent's override when it has one, else the tool's own setting."""
    return tool.needs_approval if link.needs_approval is None else link.needs_approval


async def load_tools_for_agent(
    *, db: AsyncSession, rt: Runtime, agent_id: int, user_role: str | None,
    group_ids: frozenset[int] = frozenset(), limits: access.Limits | None = None,
) -> list[RunTool]:
    """The agent's tools this caller may see, in the agent's order, with the effective approval rule.
    A non-admin chatting with an agent (or reaching it through A2A) never gets its admin-only tools, nor
    those limited to groups they are not in."""
    viewer = access.Viewer(role=user_role, group_ids=group_ids)
    limits = await _limits(db, viewer, limits)
    links = [(link, tool) for link, tool in await agent_links(db=db, agent_id=agent_id)
             if visible_to(row=tool, viewer=viewer, limits=limits)]
    unavailable = await unavailable_reasons(db=db, registry=rt.registry, rows=[tool for _, tool in links])
    hidden = await _hidden(db, viewer, limits)
    tools = [
        _for_caller(build_run_tool(row=tool, rt=rt, needs_approval=effective_needs_approval(link=link, tool=tool)),
                    tool, hidden)
        for link, tool in links
        if tool.id not in unavailable
    ]
    return [t for t in tools if t is not None]


async def tools_for_chat(
    *, db: AsyncSession, rt: Runtime, user_id: int, user_role: str | None, agent_slug: str | None = None,
    group_ids: frozenset[int] = frozenset(),
) -> list[RunTool]:
    """What the caller's model is given: the plain LLM chat's tools, or those of the enabled agent named
    by ``agent_slug`` (NotFound when there is no such enabled agent, or the caller may not use it)."""
    viewer = access.Viewer(role=user_role, group_ids=group_ids)
    limits = await access.load_limits(db=db, viewer=viewer)
    if agent_slug is None:
        return await get_enabled_tools_for_llm(db=db, rt=rt, user_id=user_id, user_role=user_role,
                                               group_ids=group_ids, limits=limits)
    agent = await agents_service.get_enabled_agent_by_slug(db=db, slug=agent_slug, viewer=viewer, limits=limits)
    return await load_tools_for_agent(db=db, rt=rt, agent_id=agent.id, user_role=user_role, group_ids=group_ids,
                                      limits=limits)
