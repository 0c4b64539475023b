"""Admin HTTP for groups: ``GET/POST /api/admin/groups``, ``GET/PUT/DELETE /api/admin/groups/{id}``,
``GET/PUT /api/admin/groups/{id}/members`` (the body a JSON list of user ids; local groups only)."""

from __future__ import annotations

from fastapi import APIRouter, Body, Response

from agentloft.auth.dependencies import AdminUser
from agentloft.core.dependencies import DbSession, Paging
from agentloft.core.schemas import DbInt, Page
from agentloft.groups import service
from agentloft.groups.schemas import GroupCreate, GroupMembers, GroupRead, GroupUpdate, MemberIds

admin_router = APIRouter(prefix="/api/admin/groups", tags=["admin"])


@admin_router.get("", response_model=Page[GroupRead])
async def admin_list(_: AdminUser, db: DbSession, paging: Paging) -> Page[GroupRead]:
    items, total = await service.list_groups(db=db, page=paging)
    return Page[GroupRead].of(items, total, paging)


@admin_router.post("", response_model=GroupRead, status_code=201)
async def admin_create(body: GroupCreate, _: AdminUser, db: DbSession) -> GroupRead:
    return await service.create_group(db=db, data=body)


@admin_router.get("/{group_id}", response_model=GroupRead)
async def admin_read(group_id: DbInt, _: AdminUser, db: DbSession) -> GroupRead:
    return await service.read_group(db=db, group_id=group_id)


@admin_router.put("/{group_id}", response_model=GroupRead)
async def admin_update(group_id: DbInt, body: GroupUpdate, _: AdminUser, db: DbSession) -> GroupRead:
    return await service.update_group(db=db, group_id=group_id, data=body)


@admin_router.delete("/{group_id}", status_code=204)
async def admin_delete(group_id: DbInt, _: AdminUser, db: DbSession) -> Response:
    await service.delete_group(db=db, group_id=group_id)
    return Response(status_code=204)


@admin_router.get("/{group_id}/members", response_model=GroupMembers)
async def admin_members(group_id: DbInt, _: AdminUser, db: DbSession) -> GroupMembers:
    user_ids = await service.member_ids(db=db, group_id=group_id)
    return GroupMembers(group=await service.read_group(db=db, group_id=group_id), user_ids=user_ids)


@admin_router.put("/{group_id}/members", response_model=GroupMembers)
async def admin_set_members(group_id: DbInt, _: AdminUser, db: DbSession,
                            body: MemberIds = Body(...)) -> GroupMembers:
    user_ids = await service.set_members(db=db, group_id=group_id, user_ids=body)
    return GroupMembers(group=await service.read_group(db=db, group_id=group_id), user_ids=user_ids)
