"""REST API /api/knowledge: the signed-in user's own collections, their files, and search.

HTTP only: the rules (isolation, states, ranking) are in ``knowledge.service``. Another user's collection
is 404 like a missing one on every route; adding a file that is not the user's own is 404
``file_not_found``. Adding a file answers 202: it is indexed in the background (poll the collection).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from agentloft.auth.dependencies import CurrentUser
from agentloft.auth.models import User
from agentloft.core.dependencies import Paging, Rt
from agentloft.core.errors import Forbidden
from agentloft.core.schemas import Page
from agentloft.knowledge import service
from agentloft.knowledge.schemas import (
    CollectionCreate,
    CollectionDetail,
    CollectionFileRead,
    CollectionRead,
    CollectionUpdate,
    FileAdd,
    SearchResult,
)

router = APIRouter(prefix="/api/knowledge", tags=["knowledge"])


def _groups_by_admins(user: User, group_ids: list[int] | None) -> None:
    """Groups decide who agents search an admin's collection for; a user's own collection is never
    searched by agents (``tools.types.knowledge``), so limiting it would mean nothing."""
    if group_ids and not user.is_admin:
        raise Forbidden("only administrators limit collections to groups", code="admin_required")


async def _detail(rt: Rt, user_id: int, collection_id: str) -> CollectionDetail:
    summary, files = await service.get(rt=rt, user_id=user_id, collection_id=collection_id)
    return CollectionDetail.model_validate(
        {**summary.__dict__, "files": [CollectionFileRead.model_validate(f) for f in files]})


@router.post("", response_model=CollectionRead, status_code=201)
async def create_collection(body: CollectionCreate, user: CurrentUser, rt: Rt) -> CollectionRead:
    _groups_by_admins(user, body.group_ids)
    row = await service.create(rt=rt, user_id=user.id, name=body.name, description=body.description,
                               group_ids=body.group_ids)
    return CollectionRead.model_validate(row)


@router.get("", response_model=Page[CollectionRead])
async def list_collections(user: CurrentUser, rt: Rt, paging: Paging) -> Page[CollectionRead]:
    """Newest first."""
    rows, total = await service.list_collections(rt=rt, user_id=user.id, offset=paging.offset,
                                                 limit=paging.page_size)
    return Page[CollectionRead].of([CollectionRead.model_validate(r) for r in rows], total, paging)


@router.get("/{collection_id}", response_model=CollectionDetail)
async def read_collection(collection_id: str, user: CurrentUser, rt: Rt) -> CollectionDetail:
    return await _detail(rt, user.id, collection_id)


@router.put("/{collection_id}", response_model=CollectionDetail)
async def update_collection(collection_id: str, body: CollectionUpdate, user: CurrentUser,
                            rt: Rt) -> CollectionDetail:
    _groups_by_admins(user, body.group_ids)
    await service.update(rt=rt, user_id=user.id, collection_id=collection_id,
                         changes=body.model_dump(exclude_unset=True))
    return await _detail(rt, user.id, collection_id)


@router.delete("/{collection_id}", status_code=204)
async def delete_collection(collection_id: str, user: CurrentUser, rt: Rt) -> Response:
    await service.delete_collection(rt=rt, user_id=user.id, collection_id=collection_id)
    return Response(status_code=204)


@router.post("/{collection_id}/files", response_model=CollectionFileRead, status_code=202)
async def add_file(collection_id: str, body: FileAdd, user: CurrentUser, rt: Rt) -> CollectionFileRead:
    entry = await service.add_file(rt=rt, user_id=user.id, collection_id=collection_id, file_id=body.file_id)
    return CollectionFileRead.model_validate(entry)


@router.delete("/{collection_id}/files/{file_id}", status_code=204)
async def remove_file(collection_id: str, file_id: str, user: CurrentUser, rt: Rt) -> Response:
    await service.remove_file(rt=rt, user_id=user.id, collection_id=collection_id, file_id=file_id)
    return Response(status_code=204)


@router.get("/{collection_id}/search", response_model=SearchResult)
async def search_collection(
    collection_id: str, user: CurrentUser, rt: Rt,
    q: Annotated[str, Query(min_length=1, max_length=500)],
    top_k: Annotated[int, Query(alias="topK", ge=1, le=service.MAX_TOP_K)] = 5,
) -> SearchResult:
    """Ranked best first; ``mode`` says whether vectors were fused in."""
    found = await service.search_own(rt=rt, user_id=user.id, collection_id=collection_id, q=q, top_k=top_k)
    return SearchResult.model_validate({"items": [h.__dict__ for h in found.items], "mode": found.mode})
