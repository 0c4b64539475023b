"""Tools as rows: their types, the admin's CRUD, the debug runner, agent links and prompt warnings (seed 001).

What a turn is given lives in ``tools.loading`` (visibility is decided there and only there), a row's
config and secrets in ``tools.config``; this module is what the admin's pages and routes call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError
from sqlalchemy import delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents import service as agents_service
from agentloft.core.db import one_or_404, value_taken
from agentloft.core.errors import Conflict, FieldProblem, Invalid, NotFound, invalid_field, problem
from agentloft.core.runtime import Runtime
from agentloft.core.schemas import PageParams
from agentloft.groups import access, approvers
from agentloft.tools import config as tool_config
from agentloft.tools import loading
from agentloft.tools.base import AnyToolType, ToolContext, ToolResult
from agentloft.tools.models import AgentTool, AgentToolAssociation
from agentloft.tools.registry import ToolRegistry
from agentloft.tools.runner import run_tool
from agentloft.tools.schemas import (
    AgentToolCreate,
    AgentToolLinkIn,
    AgentToolLinkRead,
    AgentToolRead,
    AgentToolUpdate,
    ToolTypeRead,
)

# --- tool types -----------------------------------------------------------------------------------


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
        secret_fields=tool_config.secret_keys(tool_type),
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


async def read_tools(*, db: AsyncSession, registry: ToolRegistry, rows: Sequence[AgentTool]) -> list[AgentToolRead]:
    """Rows as the admin sees them: each with the reason it cannot run now, if there is one."""
    reasons = await loading.unavailable_reasons(db=db, registry=registry, rows=rows)
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
    tool_config.apply_config(row=row, tool_type=tool_type, box=rt.box, incoming=data.config, stored={})
    tool_config.check_enableable(row=row, tool_type=tool_type, box=rt.box)
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
        stored = {} if type_changed else tool_config.decrypt_kept(box=rt.box, row=row)
        tool_config.apply_config(row=row, tool_type=tool_type, box=rt.box, incoming=incoming, stored=stored)
        row.type = tool_type.slug
    if changes.get("slug") and await _slug_taken(db, changes["slug"], except_id=row.id):
        raise _slug_conflict(changes["slug"])
    for field in ("slug", "name", "description", "enabled", "needs_approval", "audit_arguments"):
        if changes.get(field) is not None:
            setattr(row, field, changes[field])
    if changes.get("admin_only") is not None:
        row.admin_only = int(changes["admin_only"])
    if (row_type := rt.registry.get(row.type)) is not None:
        tool_config.check_enableable(row=row, tool_type=row_type, box=rt.box)
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
    tool = loading.build_run_tool(row=row, rt=rt)
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
        effective_needs_approval=loading.effective_needs_approval(link=link, tool=tool),
        slug=tool.slug,
        name=tool.name,
        type=tool.type,
        enabled=tool.enabled,
        admin_only=bool(tool.admin_only),
    )


async def list_agent_tools(*, db: AsyncSession, agent_id: int) -> list[AgentToolLinkRead]:
    await agents_service.get_agent(db=db, agent_id=agent_id)
    return [_link_read(link, tool) for link, tool in await loading.agent_links(db=db, agent_id=agent_id)]


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
