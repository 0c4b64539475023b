"""Files service: upload, read, list and delete one's own files, and the text read from them.

Every function takes the owner's id and every query filters by it: another user's file is as missing as
one that never existed (``404 file_not_found``), on every route and for every caller (chat attachments,
knowledge collections).

An upload is checked before anything is kept: its size (``AGENTLOFT_FILE_MAX_BYTES``, ``413
file_too_large``), its type from its content (``files.sniff``, ``415 file_type_unsupported``) and the
user's stored-bytes limit (``core.storage_quota``, ``413 storage_quota_exceeded``, checked again as the
row is written, so that concurrent uploads cannot pass it together). Then its
bytes go to the store and its row to the database. Text is decoded at once, so a text file is ``ready``
in the upload's answer; an image has nothing to read and is ``ready`` too; documents (PDF, DOCX, PPTX,
XLSX, HTML) answer ``processing`` and are read by the ``file.extract`` job (``files.jobs``), queued in
the transaction that adds the row, which ends them ``ready`` or ``failed`` with the reason. Documents are
only ever parsed in the sandbox (``files.extract``): on a host where it cannot run, a document is refused
at upload with ``503 file_extraction_unavailable`` and the sandbox's reason, so that nobody is left with a
file that can never be read (text and images keep working).

What was read is kept in the store beside the bytes, as JSON ``{"pages": [{"number", "text"}]}``
(``number`` None for formats without pages), never in a column that lists read. The store is written
before the row is committed and cleaned up if that fails; a delete removes the row first, then the
objects, so a crash in between leaves unreachable bytes, never a row without them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core import jobs, storage_quota
from agentloft.core.db import one_or_404
from agentloft.core.ids import new_id
from agentloft.files import extract
from agentloft.files.errors import (
    FileExtractionUnavailable,
    FileNotFound,
    FileProcessing,
    FileTooLarge,
    FileUnreadable,
)
from agentloft.files.models import File, FileStatus
from agentloft.files.sniff import Sniffed, sniff
from agentloft.files.store import ObjectMissing
from agentloft.tools.sandbox import SandboxUnavailable

if TYPE_CHECKING:
    from agentloft.auth.models import User
    from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

MAX_NAME_CHARS = 255
EXTRACT_JOB = "file.extract"
_UNSAFE_NAME = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


@dataclass(frozen=True)
class Page:
    number: int | None
    """The page (PDF), slide (PPTX) or sheet (XLSX), from 1; None for text, HTML and DOCX."""
    text: str


@dataclass(frozen=True)
class Extracted:
    pages: Sequence[Page]

    @property
    def chars(self) -> int:
        return sum(len(p.text) for p in self.pages)

    def to_json(self) -> bytes:
        return json.dumps({"pages": [{"number": p.number, "text": p.text} for p in self.pages]},
                          ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> Extracted:
        pages: Sequence[dict[str, Any]] = json.loads(data)["pages"]
        return cls(pages=[Page(number=p["number"], text=p["text"]) for p in pages])


def bytes_key(row: File) -> str:
    return f"{row.user_id}/{row.id}"


def text_key(row: File) -> str:
    return f"{row.user_id}/{row.id}.text.json"


def clean_name(name: str | None) -> str:
    """The name to keep: the last part of a path (some browsers send ``C:\\…\\report.pdf``), without control
    or direction-changing characters, at most 255 characters with the extension kept; ``file`` if nothing
    is left."""
    base = re.split(r"[\\/]", unicodedata.normalize("NFC", name or ""))[-1]
    base = _UNSAFE_NAME.sub("", base).strip()
    if len(base) > MAX_NAME_CHARS:
        ext = base.rpartition(".")[2] if "." in base else ""
        tail = f".{ext}" if 0 < len(ext) <= 16 else ""
        base = base[: MAX_NAME_CHARS - len(tail)].rstrip() + tail
    return base or "file"


# --- uploads -----------------------------------------------------------------------------------------


def _checked(data: bytes, name: str, limit: int) -> tuple[Sniffed, str]:
    """What the file is and its SHA-256 (both read every byte: run on a worker thread)."""
    if len(data) > limit:
        raise FileTooLarge(limit)
    return sniff(name, data), hashlib.sha256(data).hexdigest()


def _status_of(kind: Sniffed) -> FileStatus:
    return "ready" if kind.family in ("text", "image") else "processing"


async def create(*, rt: Runtime, user: User, name: str | None, data: bytes) -> File:
    """Keep an upload; its row as the answer (``ready``, or ``processing`` while a job reads it)."""
    name = clean_name(name)
    kind, digest = await asyncio.to_thread(_checked, data, name, rt.settings.file_max_bytes)
    if kind.family not in ("text", "image"):
        await _extraction_available(rt, kind)
    row = File(id=new_id("fl"), user_id=user.id, name=name, media_type=kind.media_type, size=len(data),
               sha256=digest, status=_status_of(kind))
    text = None if kind.text is None or kind.family != "text" else Extracted(pages=[Page(None, kind.text)])
    limit = rt.settings.user_storage_bytes
    async with rt.db.read_session() as db:  # before the store: a refused upload stores nothing
        await storage_quota.refuse_over_limit(db=db, user_id=user.id, limit=limit, adding=row.size, field="file")
    store = rt.file_store
    await store.put(bytes_key(row), data)
    try:
        if text is not None:
            await store.put(text_key(row), await asyncio.to_thread(text.to_json))
            row.chars = text.chars
        async with rt.db.session() as db:
            db.add(row)
            await db.flush()  # counted by the database: checked again, with concurrent uploads counted
            await storage_quota.refuse_over_limit(db=db, user_id=user.id, limit=limit, field="file")
            if row.status == "processing":
                await jobs.enqueue(db, EXTRACT_JOB, {"fileId": row.id, "userId": row.user_id})
    except BaseException:
        await _remove_objects(rt, row)
        raise
    return row


async def _extraction_available(rt: Runtime, kind: Sniffed) -> None:
    try:
        await extract.available(rt.settings)
    except SandboxUnavailable as exc:
        raise FileExtractionUnavailable(kind.family.upper(), str(exc)) from None


async def _remove_objects(rt: Runtime, row: File) -> None:
    for key in (bytes_key(row), text_key(row)):
        try:
            await rt.file_store.delete(key)
        except Exception as exc:  # left behind, unreachable: no row names it
            log.warning("could not delete %s from the file store: %s", key, exc)


# --- reading -----------------------------------------------------------------------------------------


def _owned(user_id: int, file_id: str) -> Any:
    return select(File).where(File.id == file_id, File.user_id == user_id)


async def get(*, rt: Runtime, user_id: int, file_id: str) -> File:
    async with rt.db.read_session() as db:
        return await one_or_404(db, _owned(user_id, file_id), FileNotFound())


async def list_files(*, rt: Runtime, user_id: int, offset: int, limit: int) -> tuple[Sequence[File], int]:
    """One page of the user's files, newest first, and how many there are."""
    async with rt.db.read_session() as db:
        total = (await db.execute(select(func.count()).select_from(File).where(File.user_id == user_id))).scalar_one()
        stmt = (select(File).where(File.user_id == user_id).order_by(File.created_at.desc(), File.id.desc())
                .offset(offset).limit(limit))
        return (await db.execute(stmt)).scalars().all(), total


async def download(*, rt: Runtime, user_id: int, file_id: str) -> tuple[File, bytes]:
    """The file's row and its original bytes."""
    row = await get(rt=rt, user_id=user_id, file_id=file_id)
    try:
        return row, await rt.file_store.get(bytes_key(row))
    except ObjectMissing:  # deleted meanwhile (or lost from the store)
        raise FileNotFound() from None


async def content(*, rt: Runtime, user_id: int, file_id: str) -> bytes:
    """The original bytes."""
    return (await download(rt=rt, user_id=user_id, file_id=file_id))[1]


async def extracted(*, rt: Runtime, user_id: int, file_id: str) -> Extracted | None:
    """The text read from the file; None for an image (it has none). ``409 file_processing`` while it is
    being read, ``422 file_unreadable`` with its error when reading it failed."""
    row = await get(rt=rt, user_id=user_id, file_id=file_id)
    if row.status == "processing":
        raise FileProcessing()
    if row.status == "failed":
        raise FileUnreadable(row.error or "unknown reason")
    if row.media_type.startswith("image/"):
        return None
    try:
        data = await rt.file_store.get(text_key(row))
    except ObjectMissing:
        raise FileNotFound() from None
    return await asyncio.to_thread(Extracted.from_json, data)


async def existing_ids(*, db: AsyncSession, user_id: int, file_ids: Sequence[str]) -> set[str]:
    """Which of ``file_ids`` are the user's files still (one query): what a chat marks as deleted."""
    if not file_ids:
        return set()
    stmt = select(File.id).where(File.user_id == user_id, File.id.in_(set(file_ids)))
    return set((await db.execute(stmt)).scalars())


# --- deleting ----------------------------------------------------------------------------------------


async def delete(*, rt: Runtime, user_id: int, file_id: str) -> None:
    async with rt.db.session() as db:
        row = await one_or_404(db, _owned(user_id, file_id), FileNotFound())
        await db.delete(row)
    await _remove_objects(rt, row)


# The name the other domains call it by (``files_service.list``); defined last, since it hides the builtin
# in this module.
list = list_files
