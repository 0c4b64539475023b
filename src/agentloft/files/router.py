"""REST API /api/files: the signed-in user's own files.

HTTP only: the rules (limits, types, isolation) are in ``files.service``. Another user's file is 404 like
a missing one on every route. An upload's body has its own limit, a little above
``AGENTLOFT_FILE_MAX_BYTES`` for the multipart framing (``app``), in place of the API's 16 MiB.
"""

from __future__ import annotations

from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Response, UploadFile
from fastapi import File as FormFile

from agentloft.auth.dependencies import CurrentUser
from agentloft.core.dependencies import Paging, Rt
from agentloft.core.schemas import Page
from agentloft.files import service
from agentloft.files.schemas import FileRead

router = APIRouter(prefix="/api/files", tags=["files"])


@router.post("", response_model=FileRead, status_code=201)
async def upload_file(user: CurrentUser, rt: Rt, file: Annotated[UploadFile, FormFile()]) -> FileRead:
    """Multipart form with the field ``file``. ``ready`` at once for text and images; documents answer
    ``processing`` and are read in the background (poll ``GET /api/files/{id}``)."""
    data = await file.read(rt.settings.file_max_bytes + 1)  # one byte more tells "too large" apart
    row = await service.create(rt=rt, user=user, name=file.filename, data=data)
    return FileRead.model_validate(row)


@router.get("", response_model=Page[FileRead])
async def list_files(user: CurrentUser, rt: Rt, paging: Paging) -> Page[FileRead]:
    """Newest first."""
    rows, total = await service.list_files(rt=rt, user_id=user.id, offset=paging.offset, limit=paging.page_size)
    return Page[FileRead].of([FileRead.model_validate(r) for r in rows], total, paging)


@router.get("/{file_id}", response_model=FileRead)
async def read_file(file_id: str, user: CurrentUser, rt: Rt) -> FileRead:
    return FileRead.model_validate(await service.get(rt=rt, user_id=user.id, file_id=file_id))


def attachment(name: str) -> str:
    """A ``Content-Disposition`` that downloads under ``name``: an ASCII stand-in for old clients and the
    exact name in RFC 5987 form."""
    fallback = "".join(c if c.isascii() and c.isprintable() and c not in '"\\' else "_" for c in name)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"


@router.get("/{file_id}/content")
async def file_content(file_id: str, user: CurrentUser, rt: Rt) -> Response:
    """The original bytes, as a download (never shown inline: an HTML file must not run as this site's
    page). No charset is claimed: the bytes are the uploader's, in whatever encoding they were."""
    row, data = await service.download(rt=rt, user_id=user.id, file_id=file_id)
    return Response(content=data, headers={
        "content-type": row.media_type, "content-disposition": attachment(row.name),
        "cache-control": "private, no-cache", "content-security-policy": "sandbox; default-src 'none'",
    })


@router.delete("/{file_id}", status_code=204)
async def delete_file(file_id: str, user: CurrentUser, rt: Rt) -> Response:
    await service.delete(rt=rt, user_id=user.id, file_id=file_id)
    return Response(status_code=204)
