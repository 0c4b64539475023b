"""REST API /api/agent-documents: the signed-in user's own documents, their versions and restore.

HTTP only: every rule (isolation, limits, summaries, versions) is in ``documents.service``. Not signed in
is 401, someone else's document is 404 like a missing one, over-long content is 413, and a body that
carries ``sessionId`` (which only the tool may set) is refused with 422 like any unknown key.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from agentloft.auth.dependencies import CurrentUser
from agentloft.core.dependencies import DbSession, Paging, Rt
from agentloft.core.schemas import DbInt, Page
from agentloft.documents import service
from agentloft.documents.schemas import (
    DocumentCreate,
    DocumentListItem,
    DocumentRead,
    DocumentUpdate,
    VersionListItem,
    VersionRead,
)

router = APIRouter(prefix="/api/agent-documents", tags=["documents"])


@router.get("", response_model=Page[DocumentListItem])
async def list_documents(
    user: CurrentUser,
    db: DbSession,
    paging: Paging,
    type: Annotated[Literal["memory", "document"] | None, Query()] = None,
    q: Annotated[str | None, Query(max_length=200)] = None,
) -> Page[DocumentListItem]:
    """Newest first; with ``q``, ranked by full-text relevance."""
    found = await service.list_documents(
        db=db, user_id=user.id, type=type, q=q, page=paging.page, page_size=paging.page_size
    )
    items = [DocumentListItem.model_validate(r) for r in found.items]
    return Page[DocumentListItem].of(items, found.total, paging)


@router.post("", response_model=DocumentRead, status_code=201)
async def create_document(body: DocumentCreate, user: CurrentUser, db: DbSession, rt: Rt) -> DocumentRead:
    row = await service.create_document(
        db=db, user_id=user.id, **body.model_dump(), max_content_length=service.HARD_MAX_CONTENT_LENGTH,
        storage_limit=rt.settings.user_storage_bytes,
    )
    return DocumentRead.model_validate(row)


@router.get("/{document_id}", response_model=DocumentRead)
async def read_document(document_id: str, user: CurrentUser, db: DbSession) -> DocumentRead:
    row = await service.get_document_by_id(db=db, user_id=user.id, document_id=document_id)
    return DocumentRead.model_validate(row)


@router.put("/{document_id}", response_model=DocumentRead)
async def update_document(
    document_id: str, body: DocumentUpdate, user: CurrentUser, db: DbSession, rt: Rt
) -> DocumentRead:
    row = await service.update_document(
        db=db, user_id=user.id, document_id=document_id, changes=body.model_dump(exclude_unset=True),
        storage_limit=rt.settings.user_storage_bytes,
    )
    return DocumentRead.model_validate(row)


@router.delete("/{document_id}", status_code=204)
async def delete_document(document_id: str, user: CurrentUser, db: DbSession) -> Response:
    await service.delete_document(db=db, user_id=user.id, document_id=document_id)
    return Response(status_code=204)


@router.get("/{document_id}/versions", response_model=Page[VersionListItem])
async def list_versions(
    document_id: str, user: CurrentUser, db: DbSession, paging: Paging
) -> Page[VersionListItem]:
    """Previous states, newest first (the current state is the document itself)."""
    rows, total = await service.list_versions(
        db=db, user_id=user.id, document_id=document_id, offset=paging.offset, limit=paging.page_size
    )
    return Page[VersionListItem].of([VersionListItem.model_validate(r) for r in rows], total, paging)


@router.get("/{document_id}/versions/{version}", response_model=VersionRead)
async def read_version(document_id: str, version: DbInt, user: CurrentUser, db: DbSession) -> VersionRead:
    row = await service.get_version(db=db, user_id=user.id, document_id=document_id, version=version)
    return VersionRead(
        version=row.version, type=row.type, title=row.title, summary=row.summary, tags=row.tags,
        created_at=row.created_at, content_length=len(row.content), content=row.content,
    )


@router.post("/{document_id}/versions/{version}/restore", response_model=DocumentRead)
async def restore_version(document_id: str, version: DbInt, user: CurrentUser, db: DbSession,
                          rt: Rt) -> DocumentRead:
    row = await service.restore_version(db=db, user_id=user.id, document_id=document_id, version=version,
                                        storage_limit=rt.settings.user_storage_bytes)
    return DocumentRead.model_validate(row)
