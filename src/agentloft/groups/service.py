"""Groups service: memberships as sign-in providers report them, and a user's groups.

``sync_provider_groups`` runs at every sign-in through a provider, possibly for several people at once:
creating a group and adding a membership are ``INSERT … ON CONFLICT DO NOTHING``, so two first sign-ins
that both bring a new group name both succeed and share one group. Names are compared exactly (after
trimming spaces); empty names and names longer than a group name may be are ignored rather than failing
the sign-in. Local groups and other providers' groups are never touched by a provider's sync.

Admins manage local groups (name, description, members as a whole list). A synced group is read-only
(``409 group_synced``): the next sign-in would undo a change. It may still be deleted, to clear a group
a provider no longer sends; a member's next sign-in through that provider brings it back if it does.
Unknown user ids in a member list are refused (422) rather than dropped: the admin meant someone.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.core.db import one_or_404, table_of, utcnow
from agentloft.core.errors import Invalid, problem
from agentloft.core.schemas import PageParams
from agentloft.groups.errors import GroupInUse, GroupNameTaken, GroupNotFound, GroupSynced
from agentloft.groups.models import LOCAL_SOURCE, NAME_MAX, ApproverGroup, Group, GroupMember, ResourceGroup
from agentloft.groups.schemas import GroupCreate, GroupRead, GroupRef, GroupUpdate


async def _insert_missing(db: AsyncSession, model: type[Group] | type[GroupMember],
                          rows: Sequence[dict[str, Any]]) -> None:
    """Insert ``rows``, leaving any that collide with an existing unique key as they are."""
    if not rows:
        return
    insert = pg_insert if db.get_bind().dialect.name == "postgresql" else sqlite_insert
    await db.execute(insert(table_of(model)).values(list(rows)).on_conflict_do_nothing())


def _clean_names(names: Iterable[str]) -> list[str]:
    return sorted({n.strip() for n in names if n.strip() and len(n.strip()) <= NAME_MAX})


async def sync_provider_groups(*, db: AsyncSession, user_id: int, source: str, names: list[str]) -> list[int]:
    """Make the user a member of exactly the groups of ``source`` named in ``names`` (creating the missing
    ones with that source, leaving the user's other groups of that source); returns all the user's group
    ids (every source), ascending."""
    if source == LOCAL_SOURCE:
        raise ValueError("local groups are managed by admins, not synced")
    wanted = _clean_names(names)
    now = utcnow()
    await _insert_missing(db, Group, [{"name": n, "source": source, "description": "", "created_at": now,
                                       "updated_at": now} for n in wanted])
    ids = list((await db.execute(
        select(Group.id).where(Group.source == source, Group.name.in_(wanted)))).scalars()) if wanted else []
    others = select(Group.id).where(Group.source == source, Group.id.not_in(ids))
    await db.execute(delete(GroupMember).where(GroupMember.user_id == user_id, GroupMember.group_id.in_(others)))
    await _insert_missing(db, GroupMember, [{"group_id": g, "user_id": user_id, "created_at": now} for g in ids])
    return sorted(await user_group_ids(db=db, user_id=user_id))


async def user_group_ids(*, db: AsyncSession, user_id: int) -> frozenset[int]:
    """The ids of every group the user belongs to (local and synced)."""
    stmt = select(GroupMember.group_id).where(GroupMember.user_id == user_id)
    return frozenset((await db.execute(stmt)).scalars())


# --- admins' groups ------------------------------------------------------------------------------------


def _member_counts() -> Any:
    return (select(GroupMember.group_id, func.count().label("n")).group_by(GroupMember.group_id)
            .subquery("member_counts"))


def _read(row: Group, count: int | None) -> GroupRead:
    return GroupRead(id=row.id, name=row.name, description=row.description, source=row.source,
                     member_count=int(count or 0), created_at=row.created_at, updated_at=row.updated_at)


async def list_groups(*, db: AsyncSession, page: PageParams) -> tuple[list[GroupRead], int]:
    """Every group, local and synced, by name, with its member count."""
    total = int((await db.execute(select(func.count(Group.id)))).scalar_one())
    counts = _member_counts()
    stmt = (select(Group, counts.c.n).outerjoin(counts, counts.c.group_id == Group.id)
            .order_by(Group.name, Group.source, Group.id).offset(page.offset).limit(page.page_size))
    return [_read(row, n) for row, n in (await db.execute(stmt)).all()], total


async def read_group(*, db: AsyncSession, group_id: int) -> GroupRead:
    counts = _member_counts()
    stmt = select(Group, counts.c.n).outerjoin(counts, counts.c.group_id == Group.id).where(Group.id == group_id)
    found = (await db.execute(stmt)).first()
    if found is None:
        raise GroupNotFound()
    return _read(found[0], found[1])


async def _get(db: AsyncSession, group_id: int) -> Group:
    return await one_or_404(db, select(Group).where(Group.id == group_id), GroupNotFound())


async def _local(db: AsyncSession, group_id: int) -> Group:
    row = await _get(db, group_id)
    if row.source != LOCAL_SOURCE:
        raise GroupSynced(row.source)
    return row


async def _name_taken(db: AsyncSession, name: str, except_id: int | None = None) -> bool:
    local = select(Group.id).where(Group.source == LOCAL_SOURCE, Group.name == name)
    if except_id is not None:
        local = local.where(Group.id != except_id)
    return (await db.execute(local)).first() is not None


async def _flush_named(db: AsyncSession, name: str) -> None:
    try:
        await db.flush()
    except IntegrityError as exc:  # a concurrent request took the name in between
        raise GroupNameTaken(name) from exc


async def create_group(*, db: AsyncSession, data: GroupCreate) -> GroupRead:
    if await _name_taken(db, data.name):
        raise GroupNameTaken(data.name)
    row = Group(name=data.name, description=data.description, source=LOCAL_SOURCE)
    db.add(row)
    await _flush_named(db, data.name)
    return _read(row, 0)


async def update_group(*, db: AsyncSession, group_id: int, data: GroupUpdate) -> GroupRead:
    row = await _local(db, group_id)
    if data.name is not None and data.name != row.name:
        if await _name_taken(db, data.name, except_id=row.id):
            raise GroupNameTaken(data.name)
        row.name = data.name
    if data.description is not None:
        row.description = data.description
    await _flush_named(db, row.name)
    return await read_group(db=db, group_id=group_id)


async def delete_group(*, db: AsyncSession, group_id: int) -> None:
    """Delete a group and its memberships. Refused (409 ``group_in_use``) while an agent, model, tool or
    collection is limited to it, or a tool names it as its approvers: the resource would otherwise open to
    everyone, or to its other groups (the tool's calls to their requester), without anyone deciding so."""
    row = await _get(db, group_id)
    uses = int((await db.execute(select(func.count(ResourceGroup.id))
                                 .where(ResourceGroup.group_id == group_id))).scalar_one())
    uses += int((await db.execute(select(func.count()).select_from(ApproverGroup)
                                  .where(ApproverGroup.group_id == group_id))).scalar_one())
    if uses:
        raise GroupInUse(uses)
    await db.delete(row)
    await db.flush()


async def _check_users(db: AsyncSession, user_ids: list[int]) -> None:
    if not user_ids:
        return
    known = set((await db.execute(select(User.id).where(User.id.in_(user_ids)))).scalars())
    missing = [u for u in user_ids if u not in known]
    if missing:
        raise Invalid(f"no user with id {missing[0]}",
                      fields={"body": problem("no_such_user", f"no user with id {missing[0]}", user_id=missing[0])})


async def set_members(*, db: AsyncSession, group_id: int, user_ids: list[int]) -> list[int]:
    """Make ``user_ids`` exactly the local group's members; returns them, ascending."""
    await _local(db, group_id)
    wanted = sorted(set(user_ids))
    await _check_users(db, wanted)
    await db.execute(delete(GroupMember).where(GroupMember.group_id == group_id,
                                               GroupMember.user_id.not_in(wanted)))
    await _insert_missing(db, GroupMember, [{"group_id": group_id, "user_id": u, "created_at": utcnow()}
                                            for u in wanted])
    return wanted


async def member_ids(*, db: AsyncSession, group_id: int) -> list[int]:
    await _get(db, group_id)
    stmt = select(GroupMember.user_id).where(GroupMember.group_id == group_id).order_by(GroupMember.user_id)
    return list((await db.execute(stmt)).scalars())


async def groups_of_users(*, db: AsyncSession, user_ids: Sequence[int]) -> dict[int, list[GroupRef]]:
    """Each user's groups by name (Admin → Users); a user in none maps to ``[]``."""
    found: dict[int, list[GroupRef]] = {u: [] for u in user_ids}
    if user_ids:
        stmt = (select(GroupMember.user_id, Group).join(Group, Group.id == GroupMember.group_id)
                .where(GroupMember.user_id.in_(list(user_ids))).order_by(Group.name, Group.source))
        for user_id, group in (await db.execute(stmt)).all():
            found[user_id].append(GroupRef(id=group.id, name=group.name, source=group.source))
    return found
