"""Tools as rows: admin CRUD, secrets, agent links, and the lists of tools a run may use (seed 001).

Visibility is decided here and only here. The chat engine (and A2A through it) receives the list these
functions return and can call nothing else, so an admin-only or disabled tool is not merely refused for a
non-admin: it does not exist in that run. The rule (``visible_to``) follows seed 001: enabled tools, minus
admin-only ones unless the role is ``admin``, filtered in memory because the table is small. A tool its
type reports unavailable (``ToolType.unavailable``: an MCP tool whose server is disabled) is left out too.
A tool limited to groups (``groups.access``) is left out the same way for a caller in none of them: the
callers pass the user's group ids (``group_ids``) and may pass the ``Limits`` they read already.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents import service as agents_service
from agentloft.agents.models import Agent
from agentloft.core.crypto import SecretBox
from agentloft.core.db import one_or_404, value_taken
from agentloft.core.errors import (
    Conflict,
    FieldProblem,
    Invalid,
    NotFound,
    invalid_field,
    invalid_from_pydantic,
    problem,
)
from agentloft.core.runtime import Runtime
from agentloft.core.schemas import PageParams
from agentloft.groups import access, approvers
from agentloft.tools.base import Hidden, ToolContext, ToolResult, ToolType
from agentloft.tools.models import AgentTool, AgentToolAssociation
from agentloft.tools.registry import ToolRegistry
from agentloft.tools.runner import DEFAULT_TIMEOUT_S, RunTool, run_tool
from agentloft.tools.schemas import (
    SECRET_PLACEHOLDER,
    AgentToolCreate,
    AgentToolLinkIn,
    AgentToolLinkRead,
    AgentToolRead,
    AgentToolUpdate,
    ToolInfo,
    ToolTypeRead,
)

log = logging.getLogger(__name__)

ADMIN_ROLE = "admin"
# Extra seconds the wrapper allows beyond a type's own configured timeout, so the type reports its
# own (clearer) timeout message first.
TIMEOUT_GRACE_S = 5.0

AnyToolType = ToolType[Any, Any]


# --- tool types -----------------------------------------------------------------------------------


def _json_key(model: type[BaseModel], name: str) -> str:
    """The JSON (by-alias) key of a Config field given by Python name or alias."""
    for field_name, info in model.model_fields.items():
        key = info.serialization_alias or info.alias or field_name
        if name in (field_name, key):
            return key
    return name


def secret_keys(tool_type: AnyToolType) -> list[str]:
    return [_json_key(tool_type.Config, name) for name in tool_type.secret_fields]


def _defaults(tool_type: AnyToolType) -> dict[str, Any]:
    try:
        return tool_type.Config().model_dump(mode="json", by_alias=True)
    except ValidationError:  # a Config with required fields: show the defaults it does have
        out: dict[str, Any] = {}
        for name, info in tool_type.Config.model_fields.items():
            if not info.is_required():
                value = info.get_default(call_default_factory=True)
                out[info.serialization_alias or info.alias or name] = (
                    value.model_dump(mode="json", by_alias=True) if isinstance(value, BaseModel) else value
                )
        return out


def type_info(tool_type: AnyToolType) -> ToolTypeRead:
    """A type as the admin form needs it. ``default_needs_approval``/``default_admin_only`` are optional
    class attributes a type may set (e.g. ``python``); they prefill new tools of that type."""
    return ToolTypeRead(
        slug=tool_type.slug,
        name=tool_type.name,
        description=tool_type.description,
        config_schema=tool_type.Config.model_json_schema(),
        input_schema=tool_type.Input.model_json_schema(),
        defaults=_defaults(tool_type),
        secret_fields=secret_keys(tool_type),
        default_needs_approval=bool(getattr(tool_type, "default_needs_approval", False)),
        default_admin_only=bool(getattr(tool_type, "default_admin_only", False)),
        creatable=tool_type.made_by_hand,
    )


def list_types(*, registry: ToolRegistry) -> list[ToolTypeRead]:
    return [type_info(t) for t in registry.all()]


def _type_or_invalid(registry: ToolRegistry, slug: str) -> AnyToolType:
    tool_type = registry.get(slug)
    if tool_type is None:
        raise invalid_field("type", "unknown_tool_type", f"unknown tool type '{slug}'", type=slug)
    return tool_type


def _creatable_or_invalid(registry: ToolRegistry, slug: str) -> AnyToolType:
    """A type an admin may give a tool by hand (``ToolType.made_by_hand``): MCP tools come from a refresh."""
    tool_type = _type_or_invalid(registry, slug)
    if not tool_type.made_by_hand:
        why = (f"tools of type '{slug}' are not created by hand: they come from their source "
               "(an MCP server's refresh)")
        raise Invalid(f"type: {why}", code="tool_type_not_creatable",
                      fields={"type": problem("tool_type_not_creatable", why, type=slug)})
    return tool_type


# --- config and secrets ---------------------------------------------------------------------------


def _encrypt(box: SecretBox, value: Any) -> str:
    return box.encrypt(json.dumps(value))


def _decrypt_all(box: SecretBox, stored: dict[str, str]) -> dict[str, Any]:
    return {key: json.loads(box.decrypt(token)) for key, token in stored.items()}


def _decrypt_kept(box: SecretBox, row: AgentTool) -> dict[str, Any]:
    """Stored secrets to keep on an edit; ones the current secret key cannot open are dropped (the admin
    has to enter them again) instead of failing the edit."""
    out: dict[str, Any] = {}
    for key, token in (row.secrets_enc or {}).items():
        try:
            out[key] = json.loads(box.decrypt(token))
        except ValueError:
            log.warning("tool %s: stored secret %s cannot be decrypted; dropped on edit", row.slug, key)
    return out


def _merge_secrets(
    keys: Sequence[str], incoming: dict[str, Any], stored: dict[str, Any]
) -> dict[str, Any]:
    """Secret values after an edit: absent, null or the placeholder keep the stored value; an empty
    value ("", {} or []) removes it; anything else replaces it."""
    out: dict[str, Any] = {}
    for key in keys:
        value = incoming.get(key)
        if value is None or value == SECRET_PLACEHOLDER:
            if key in stored:
                out[key] = stored[key]
        elif value not in ("", {}, []):
            out[key] = value
    return out


def _validate_config(tool_type: AnyToolType, data: dict[str, Any]) -> BaseModel:
    try:
        return tool_type.Config.model_validate(data)
    except ValidationError as exc:
        raise invalid_from_pydantic(exc, prefix="config") from exc


def _apply_config(
    row: AgentTool, tool_type: AnyToolType, box: SecretBox, incoming: dict[str, Any], stored: dict[str, Any]
) -> None:
    """Validate ``incoming`` (plus kept secrets) against the type and store it split in two: plain values
    in ``config``, secret values encrypted in ``secrets_enc``."""
    keys = secret_keys(tool_type)
    secrets = _merge_secrets(keys, incoming, stored)
    plain = {k: v for k, v in incoming.items() if k not in keys}
    parsed = _validate_config(tool_type, {**plain, **secrets})
    dumped = parsed.model_dump(mode="json", by_alias=True)
    row.config = {k: v for k, v in dumped.items() if k not in keys}
    row.secrets_enc = {k: _encrypt(box, dumped[k]) for k in keys if k in secrets and k in dumped}


def _check_enableable(row: AgentTool, tool_type: AnyToolType, box: SecretBox) -> None:
    """An enabled tool has what its type needs to run (``needed_to_enable``, secret or not, as a webhook's
    URL is); the 422 names the field."""
    if not row.enabled or not tool_type.needed_to_enable:
        return
    try:
        config = parse_stored_config(row=row, tool_type=tool_type, box=box)
    except ValueError:  # a stored config the type no longer reads: its calls say so, not this check
        return
    for name in tool_type.needed_to_enable:
        if not str(getattr(config, name, "") or "").strip():
            key = _json_key(tool_type.Config, name)
            raise invalid_field(f"config.{key}", "required_to_enable", "needed before the tool can be enabled")


def parse_stored_config(*, row: AgentTool, tool_type: AnyToolType, box: SecretBox) -> BaseModel:
    """The row's config as the type's ``Config``, secrets decrypted. Raises ValueError/ValidationError
    when the stored config no longer fits (a type changed, the secret key changed)."""
    return tool_type.Config.model_validate({**row.config, **_decrypt_all(box, row.secrets_enc or {})})


# --- admin CRUD -----------------------------------------------------------------------------------


def to_read(row: AgentTool) -> AgentToolRead:
    return AgentToolRead(
        id=row.id,
        slug=row.slug,
        name=row.name,
        description=row.description,
        type=row.type,
        config=dict(row.config or {}),
        secrets_set=sorted(row.secrets_enc or {}),
        enabled=row.enabled,
        needs_approval=row.needs_approval,
        admin_only=bool(row.admin_only),
        audit_arguments=bool(row.audit_arguments),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


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


async def read_tools(*, db: AsyncSession, registry: ToolRegistry, rows: Sequence[AgentTool]) -> list[AgentToolRead]:
    """Rows as the admin sees them: each with the reason it cannot run now, if there is one."""
    reasons = await unavailable_reasons(db=db, registry=registry, rows=rows)
    ids = [row.id for row in rows]
    groups = await access.groups_of(db=db, kind="tool", ids=ids)
    approver_ids = await approvers.approvers_of(db=db, tool_ids=ids)
    return [to_read(row).model_copy(update={"unavailable": reasons.get(row.id), "group_ids": groups[row.id],
                                            "approver_group_ids": approver_ids[row.id]})
            for row in rows]


async def read_tool(*, db: AsyncSession, registry: ToolRegistry, row: AgentTool) -> AgentToolRead:
    [read] = await read_tools(db=db, registry=registry, rows=[row])
    return read


def _slug_conflict(slug: str) -> Conflict:
    return Conflict(f"a tool with slug '{slug}' exists", code="tool_slug_taken",
                    fields={"slug": problem("slug_taken", "taken")})


async def _slug_taken(db: AsyncSession, slug: str, except_id: str | None = None) -> bool:
    return await value_taken(db, AgentTool.slug, slug, id_column=AgentTool.id, except_id=except_id)


async def _flush_unique(db: AsyncSession, slug: str) -> None:
    try:
        await db.flush()
    except IntegrityError as exc:  # a concurrent create won the race
        raise _slug_conflict(slug) from exc


async def create_tool(*, db: AsyncSession, rt: Runtime, data: AgentToolCreate) -> AgentTool:
    tool_type = _creatable_or_invalid(rt.registry, data.type)
    row = AgentTool(
        slug=data.slug,
        name=data.name,
        description=data.description,
        type=tool_type.slug,
        enabled=data.enabled,
        needs_approval=(
            data.needs_approval
            if data.needs_approval is not None
            else bool(getattr(tool_type, "default_needs_approval", False))
        ),
        admin_only=int(
            data.admin_only if data.admin_only is not None else getattr(tool_type, "default_admin_only", False)
        ),
        audit_arguments=data.audit_arguments,
    )
    _apply_config(row, tool_type, rt.box, data.config, stored={})
    _check_enableable(row, tool_type, rt.box)
    if await _slug_taken(db, data.slug):
        raise _slug_conflict(data.slug)
    group_ids = await access.check_group_ids(db=db, group_ids=data.group_ids)
    approver_ids = await access.check_group_ids(db=db, group_ids=data.approver_group_ids, field="approverGroupIds")
    db.add(row)
    await _flush_unique(db, data.slug)
    await access.set_groups(db=db, kind="tool", resource_id=row.id, group_ids=group_ids)
    await approvers.set_approvers(db=db, tool_id=row.id, group_ids=approver_ids)
    return row


async def get_tool(*, db: AsyncSession, tool_id: str) -> AgentTool:
    return await one_or_404(db, select(AgentTool).where(AgentTool.id == tool_id),
                            NotFound("tool not found", code="tool_not_found"))


async def list_tools(*, db: AsyncSession, page: PageParams) -> tuple[list[AgentTool], int]:
    total = int((await db.execute(select(func.count()).select_from(AgentTool))).scalar_one())
    stmt = select(AgentTool).order_by(AgentTool.name, AgentTool.id).offset(page.offset).limit(page.page_size)
    return list((await db.execute(stmt)).scalars()), total


async def update_tool(*, db: AsyncSession, rt: Runtime, tool_id: str, data: AgentToolUpdate) -> AgentTool:
    row = await get_tool(db=db, tool_id=tool_id)
    changes = data.model_dump(exclude_unset=True)
    type_changed = changes.get("type") not in (None, row.type)
    if type_changed or changes.get("config") is not None:
        new_type = changes.get("type") or row.type
        # A tool may keep a type that is not created by hand (an MCP tool's timeout is edited here), not
        # be turned into one.
        tool_type = (_creatable_or_invalid if type_changed else _type_or_invalid)(rt.registry, new_type)
        incoming = changes["config"] if changes.get("config") is not None else dict(row.config or {})
        # Secrets never follow a tool to another type: they were given for the old type's endpoint.
        stored = {} if type_changed else _decrypt_kept(rt.box, row)
        _apply_config(row, tool_type, rt.box, incoming, stored)
        row.type = tool_type.slug
    if changes.get("slug") and await _slug_taken(db, changes["slug"], except_id=row.id):
        raise _slug_conflict(changes["slug"])
    for field in ("slug", "name", "description", "enabled", "needs_approval", "audit_arguments"):
        if changes.get(field) is not None:
            setattr(row, field, changes[field])
    if changes.get("admin_only") is not None:
        row.admin_only = int(changes["admin_only"])
    if (row_type := rt.registry.get(row.type)) is not None:
        _check_enableable(row, row_type, rt.box)
    await _flush_unique(db, row.slug)
    if changes.get("group_ids") is not None:
        await access.set_groups(db=db, kind="tool", resource_id=row.id, group_ids=changes["group_ids"])
    if changes.get("approver_group_ids") is not None:
        await approvers.set_approvers(db=db, tool_id=row.id, group_ids=changes["approver_group_ids"])
    return row


async def delete_tool(*, db: AsyncSession, tool_id: str) -> None:
    """Delete a tool; its agent links go with it (ON DELETE CASCADE)."""
    row = await get_tool(db=db, tool_id=tool_id)
    await db.delete(row)
    await db.flush()


# --- building the tools a run sees ----------------------------------------------------------------


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
        config = parse_stored_config(row=row, tool_type=tool_type, box=box)
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


async def _agent_links(db: AsyncSession, agent_id: int) -> list[tuple[AgentToolAssociation, AgentTool]]:
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
    links = [(link, tool) for link, tool in await _agent_links(db, agent_id)
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


async def execute_tool(
    *,
    db: AsyncSession,
    rt: Runtime,
    tool_id: str,
    user_id: int,
    user_role: str,
    input: dict[str, Any],
    approved: bool = False,
) -> ToolResult:
    """Run one tool for the admin's debug panel. As in seed 001 there is no check here beyond the
    router's admin-only rule: disabled and admin-only tools run too. Approval is not skipped: ``approved``
    is the admin's explicit confirmation of this call, and a call that needs approval without it answers
    ``needsApproval`` and does nothing (``tools.runner.run_tool``)."""
    row = await get_tool(db=db, tool_id=tool_id)
    tool = build_run_tool(row=row, rt=rt)
    if tool is None:
        return ToolResult.fail(f"tool '{row.slug}' cannot run: its type or stored config is not usable")
    ctx = ToolContext(
        runtime=rt, tool_id=row.id, tool_slug=row.slug, user_id=user_id, user_role=user_role, approved=approved
    )
    return await run_tool(tool, input, ctx)


# --- agent ↔ tool links ---------------------------------------------------------------------------


def _link_read(link: AgentToolAssociation, tool: AgentTool) -> AgentToolLinkRead:
    return AgentToolLinkRead(
        tool_id=tool.id,
        needs_approval=link.needs_approval,
        position=link.position,
        effective_needs_approval=effective_needs_approval(link=link, tool=tool),
        slug=tool.slug,
        name=tool.name,
        type=tool.type,
        enabled=tool.enabled,
        admin_only=bool(tool.admin_only),
    )


async def list_agent_tools(*, db: AsyncSession, agent_id: int) -> list[AgentToolLinkRead]:
    await agents_service.get_agent(db=db, agent_id=agent_id)
    return [_link_read(link, tool) for link, tool in await _agent_links(db, agent_id)]


async def _check_links(db: AsyncSession, links: Sequence[AgentToolLinkIn]) -> None:
    fields: dict[str, FieldProblem] = {}
    seen: set[str] = set()
    ids = {link.tool_id for link in links}
    known = set((await db.execute(select(AgentTool.id).where(AgentTool.id.in_(ids)))).scalars()) if ids else set()
    for i, link in enumerate(links):
        if link.tool_id not in known:
            fields[f"{i}.toolId"] = problem("no_such_tool", f"no such tool '{link.tool_id}'", tool_id=link.tool_id)
        elif link.tool_id in seen:
            fields[f"{i}.toolId"] = problem("tool_listed_twice", f"tool '{link.tool_id}' is listed twice",
                                            tool_id=link.tool_id)
        seen.add(link.tool_id)
    if fields:
        path, first = next(iter(fields.items()))
        raise Invalid(f"{path}: {first.text}", fields=fields)


async def set_agent_tools(
    *, db: AsyncSession, agent_id: int, links: Sequence[AgentToolLinkIn]
) -> list[AgentToolLinkRead]:
    """Replace the agent's tool list. A link without a position takes its index in the list."""
    await agents_service.get_agent(db=db, agent_id=agent_id)
    await _check_links(db, links)
    await db.execute(delete(AgentToolAssociation).where(AgentToolAssociation.agent_id == agent_id))
    for i, link in enumerate(links):
        db.add(
            AgentToolAssociation(
                agent_id=agent_id,
                tool_id=link.tool_id,
                needs_approval=link.needs_approval,
                position=i if link.position is None else link.position,
            )
        )
    try:
        await db.flush()
    except IntegrityError as exc:  # on PostgreSQL, another request replaced the list in between
        raise Conflict("The agent's tools were changed by another request at the same time; reload them and try "
                       "again", code="agent_tools_changed") from exc
    return await list_agent_tools(db=db, agent_id=agent_id)


# --- prompts that name hidden tools ------------------------------------------------------------------


def _mentions(text: str, words: str) -> bool:
    """``words`` (a slug or a name) appears in ``text`` as a whole word, in any case and spacing."""
    pattern = r"\s+".join(re.escape(part) for part in words.split())
    return bool(pattern) and re.search(rf"(?<![\w-]){pattern}(?![\w-])", text, re.IGNORECASE) is not None


async def prompt_warnings(*, db: AsyncSession, prompt: str) -> list[str]:
    """Warnings for an agent's system prompt that names an admin-only tool or one limited to groups (by
    slug or name): such a tool never reaches the model of a user who may not use it, but the prompt would
    still tell that model it exists."""
    if not prompt.strip():
        return []
    limited = set((await access.load_limits(db=db)).groups.get("tool", {}))
    stmt = select(AgentTool).where(or_(AgentTool.admin_only != 0, AgentTool.id.in_(sorted(limited))))
    return [_hidden_tool_warning(row) for row in (await db.execute(stmt.order_by(AgentTool.slug))).scalars()
            if _mentions(prompt, row.slug) or _mentions(prompt, row.name)]


def _hidden_tool_warning(row: AgentTool) -> str:
    kind, who = (("admin-only", "users who are not admins") if row.admin_only
                 else ("group-limited", "users outside its groups"))
    return (f"The system prompt names the {kind} tool '{row.name}' ({row.slug}): {who} do not get it, but "
            "their model would still read about it. Describe the task instead; the model sees the tools it has "
            "in its tool list.")
