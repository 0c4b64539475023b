"""Who may use what: the one rule for agents, models, tools and knowledge collections limited to groups.

A resource with no groups is open to everyone (what every resource was before groups); with groups, only
their members and admins see or reach it. Every path that lists or loads one of these for a user asks
``Viewer.may_use`` with the resource's groups from ``load_limits`` (one statement for every kind: the
table holds only what admins configured). A ``Viewer`` carries the caller's group ids, read once per
request or turn (``viewer_of``, through the read cache's ``groups`` entries) and handed down to the tools
and to agent-invoke, where the calling user's groups decide. An admin's groups are never read: an admin
sees everything.

The default ``Viewer`` of a code path that names no groups is a member of none: such a path shows less,
never more.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import ColumnElement, delete, or_, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from agentloft.core.errors import Invalid, problem
from agentloft.groups import service as groups_service
from agentloft.groups.models import Group, GroupMember, ResourceGroup

if TYPE_CHECKING:
    from agentloft.core.db import Database

Kind = Literal["agent", "model", "tool", "collection"]
ADMIN_ROLE = "admin"
_COLUMNS: dict[Kind, InstrumentedAttribute[Any]] = {
    "agent": ResourceGroup.agent_id, "model": ResourceGroup.model_id, "tool": ResourceGroup.tool_id,
    "collection": ResourceGroup.collection_id,
}


@dataclass(frozen=True)
class Viewer:
    """The caller as access sees them: their role and, unless they are an admin, their group ids."""

    role: str | None
    group_ids: frozenset[int] = field(default_factory=frozenset)

    @property
    def sees_all(self) -> bool:
        return self.role == ADMIN_ROLE

    def may_use(self, groups: frozenset[int]) -> bool:
        return self.sees_all or not groups or not groups.isdisjoint(self.group_ids)


@dataclass(frozen=True)
class Limits:
    """Every limited resource's groups, by kind; a resource not in it is open to everyone."""

    groups: dict[Kind, dict[Hashable, frozenset[int]]]

    def of(self, kind: Kind, resource_id: Hashable) -> frozenset[int]:
        return self.groups.get(kind, {}).get(resource_id, frozenset())

    def allows(self, viewer: Viewer, kind: Kind, resource_id: Hashable) -> bool:
        return viewer.may_use(self.of(kind, resource_id))


NO_LIMITS = Limits(groups={})


def allowed(kind: Kind, id_column: ColumnElement[Any] | InstrumentedAttribute[Any],
            viewer: Viewer) -> ColumnElement[bool]:
    """``Viewer.may_use`` as a SQL condition on ``id_column``, for lists paged in the database."""
    if viewer.sees_all:
        return true()
    column = _COLUMNS[kind]
    limited = select(ResourceGroup.id).where(column == id_column)
    if not viewer.group_ids:
        return ~limited.exists()
    return or_(~limited.exists(), limited.where(ResourceGroup.group_id.in_(sorted(viewer.group_ids))).exists())


def allowed_to_owner(kind: Kind, id_column: ColumnElement[Any] | InstrumentedAttribute[Any],
                     user_id: ColumnElement[Any] | InstrumentedAttribute[Any],
                     role: ColumnElement[Any] | InstrumentedAttribute[Any]) -> ColumnElement[bool]:
    """``allowed`` for a user named by a row rather than by the caller (``user_id`` and ``role`` columns of
    the query): what another's row may still use, e.g. whether a paused chat's requester may still use its
    agent, and so whether answering it could resume anything."""
    column = _COLUMNS[kind]
    limited = select(ResourceGroup.id).where(column == id_column)
    member = limited.join(GroupMember, GroupMember.group_id == ResourceGroup.group_id).where(
        GroupMember.user_id == user_id)
    return or_(role == ADMIN_ROLE, ~limited.exists(), member.exists())


async def load_limits(*, db: AsyncSession, viewer: Viewer | None = None) -> Limits:
    """Every resource's groups in one read. An admin viewer needs none (``NO_LIMITS``, no statement)."""
    if viewer is not None and viewer.sees_all:
        return NO_LIMITS
    found: dict[Kind, dict[Hashable, set[int]]] = {}
    rows = await db.execute(select(ResourceGroup.group_id, *_COLUMNS.values()))
    for group_id, *ids in rows.all():
        for kind, resource_id in zip(_COLUMNS, ids, strict=True):
            if resource_id is not None:
                found.setdefault(kind, {}).setdefault(resource_id, set()).add(group_id)
    return Limits(groups={k: {r: frozenset(g) for r, g in v.items()} for k, v in found.items()})


async def viewer_of(database: Database, *, user_id: int | None, role: str | None) -> Viewer:
    """The caller's ``Viewer``: an admin's without reading anything; another user's with their group ids,
    kept in the read cache until any membership changes."""
    if role == ADMIN_ROLE or user_id is None:
        return Viewer(role=role)

    async def read() -> frozenset[int]:
        async with database.read_session() as db:
            return await groups_service.user_group_ids(db=db, user_id=user_id)

    return Viewer(role=role, group_ids=await database.cache.load("groups", user_id, read))


# --- what admins set -----------------------------------------------------------------------------------


async def groups_of(*, db: AsyncSession, kind: Kind, ids: Sequence[Hashable]) -> dict[Hashable, list[int]]:
    """The group ids of each of ``ids`` (ascending; an open resource maps to ``[]``), for read bodies."""
    column = _COLUMNS[kind]
    found: dict[Hashable, list[int]] = {i: [] for i in ids}
    if ids:
        stmt = (select(column, ResourceGroup.group_id).where(column.in_(list(ids)))
                .order_by(ResourceGroup.group_id))
        for resource_id, group_id in (await db.execute(stmt)).all():
            found[resource_id].append(group_id)
    return found


async def check_group_ids(*, db: AsyncSession, group_ids: Iterable[int], field: str = "groupIds") -> list[int]:
    """``group_ids`` without repeats, ascending; 422 naming ``field`` when one is no group."""
    wanted = sorted(set(group_ids))
    if not wanted:
        return []
    known = set((await db.execute(select(Group.id).where(Group.id.in_(wanted)))).scalars())
    missing = [g for g in wanted if g not in known]
    if missing:
        raise Invalid(f"{field}: no group with id {missing[0]}",
                      fields={field: problem("no_such_group", f"no group with id {missing[0]}", group_id=missing[0])})
    return wanted


async def set_groups(*, db: AsyncSession, kind: Kind, resource_id: Hashable, group_ids: Iterable[int]) -> list[int]:
    """Limit the resource to exactly ``group_ids`` (empty: open to everyone); returns them, ascending."""
    wanted = await check_group_ids(db=db, group_ids=group_ids)
    column = _COLUMNS[kind]
    await db.execute(delete(ResourceGroup).where(column == resource_id))
    for group_id in wanted:
        db.add(ResourceGroup(group_id=group_id, **{column.key: resource_id}))
    await db.flush()
    return wanted
