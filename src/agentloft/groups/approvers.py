"""Approver groups of tools: whose members answer a tool's paused calls (``chat.approvals`` decides who
may, with these). Set by admins on the tool's create and update bodies (``approverGroupIds``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.groups.access import check_group_ids
from agentloft.groups.models import ApproverGroup, Group


async def approvers_of(*, db: AsyncSession, tool_ids: Sequence[str]) -> dict[str, list[int]]:
    """The approver group ids of each of ``tool_ids`` (ascending; ``[]``: its requester approves)."""
    found: dict[str, list[int]] = {i: [] for i in tool_ids}
    if tool_ids:
        stmt = (select(ApproverGroup.tool_id, ApproverGroup.group_id)
                .where(ApproverGroup.tool_id.in_(list(tool_ids))).order_by(ApproverGroup.group_id))
        for tool_id, group_id in (await db.execute(stmt)).all():
            found[tool_id].append(group_id)
    return found


async def set_approvers(*, db: AsyncSession, tool_id: str, group_ids: Iterable[int]) -> list[int]:
    """Make ``group_ids`` exactly the tool's approvers (empty: the requester approves); 422 naming
    ``approverGroupIds`` for an id that is no group."""
    wanted = await check_group_ids(db=db, group_ids=group_ids, field="approverGroupIds")
    await db.execute(delete(ApproverGroup).where(ApproverGroup.tool_id == tool_id))
    db.add_all(ApproverGroup(tool_id=tool_id, group_id=g) for g in wanted)
    await db.flush()
    return wanted


async def group_names(*, db: AsyncSession, group_ids: Iterable[int]) -> dict[int, str]:
    """Names of the given groups (one query), for the notes that say who is to approve."""
    ids = sorted(set(group_ids))
    if not ids:
        return {}
    return {r.id: r.name for r in await db.execute(select(Group.id, Group.name).where(Group.id.in_(ids)))}
