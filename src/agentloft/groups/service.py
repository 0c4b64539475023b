"""Groups service: memberships as sign-in providers report them, and a user's groups.

``sync_provider_groups`` runs at every sign-in through a provider, possibly for several people at once:
creating a group and adding a membership are ``INSERT … ON CONFLICT DO NOTHING``, so two first sign-ins
that both bring a new group name both succeed and share one group. Names are compared exactly (after
trimming spaces); empty names and names longer than a group name may be are ignored rather than failing
the sign-in. Local groups and other providers' groups are never touched by a provider's sync.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.db import table_of, utcnow
from agentloft.groups.models import LOCAL_SOURCE, NAME_MAX, Group, GroupMember


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
