"""Documents service (seed 000, chapter 5), shared by the document tool and the REST API.

Every function takes the owner's ``user_id`` and every query filters by it, so isolation is decided here
and nowhere else: another user's document is indistinguishable from a missing one, and there is no
admin path across users. Every update first keeps the previous state as a version.

A write that would take the user past their stored-bytes limit (``storage_limit``: the caller passes
``AGENTLOFT_USER_STORAGE_BYTES``) is refused with ``413 storage_quota_exceeded`` and rolled back: the
database counts what it adds, its version included (``core.storage_quota``), and the count is read right
after the write's statement, in its transaction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, case, func, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.db import one_or_404, utcnow
from agentloft.core.errors import Conflict, invalid_field
from agentloft.core.storage_quota import refuse_over_limit
from agentloft.documents import search
from agentloft.documents.errors import ContentTooLong, DocumentNotFound, VersionNotFound
from agentloft.documents.models import DOCUMENT_TYPES, AgentDocument, AgentDocumentVersion

DEFAULT_MAX_CONTENT_LENGTH = 50_000
# The largest content anyone may store: the tool's ``maxContentLength`` may be raised up to here, and
# the API accepts up to here, so whatever an agent wrote its user can still edit.
HARD_MAX_CONTENT_LENGTH = 200_000
DEFAULT_SUMMARY_LENGTH = 200
MAX_TITLE_LENGTH = 255
MAX_TAGS_LENGTH = 500
# The newest versions kept per document. Applied by the database's version trigger (migration
# 0015_version_trigger, which holds the same number): changing it takes a migration.
MAX_VERSIONS_KEPT = 100
EDITABLE_FIELDS = ("title", "content", "type", "summary", "tags")
_WS = re.compile(r"\s+")
_TAG_SPLIT = re.compile(r"[,，、]")


@dataclass(frozen=True)
class DocumentPage:
    items: list[AgentDocument]
    total: int
    page: int
    page_size: int
    has_more: bool
    offset: int


# --- field rules -------------------------------------------------------------------------------------


def cut_summary(*, content: str, length: int = DEFAULT_SUMMARY_LENGTH) -> str:
    """The seed's fallback summary: the start of the content, whitespace folded, at most ``length``
    characters (an ellipsis marks a cut)."""
    flat = _WS.sub(" ", content).strip()
    if len(flat) <= length:
        return flat
    return flat[: max(length - 1, 0)].rstrip() + "…"


def normalize_tags(tags: str | None) -> str | None:
    """Comma-separated, trimmed, de-duplicated; Chinese commas accepted. Empty becomes None."""
    if tags is None:
        return None
    out: list[str] = []
    for tag in _TAG_SPLIT.split(tags):
        tag = tag.strip()
        if tag and tag not in out:
            out.append(tag)
    joined = ",".join(out)
    if len(joined) > MAX_TAGS_LENGTH:
        raise invalid_field("tags", "string_too_long", f"at most {MAX_TAGS_LENGTH} characters",
                            max_length=MAX_TAGS_LENGTH)
    return joined or None


def _check_title(title: str | None) -> str:
    title = (title or "").strip()
    if not title:
        raise invalid_field("title", "missing", "required")
    if len(title) > MAX_TITLE_LENGTH:
        raise invalid_field("title", "string_too_long", f"at most {MAX_TITLE_LENGTH} characters",
                            max_length=MAX_TITLE_LENGTH)
    return title


def _check_content(content: str | None, limit: int) -> str:
    if content is None:
        raise invalid_field("content", "missing", "required")
    limit = min(limit, HARD_MAX_CONTENT_LENGTH)
    if len(content) > limit:
        raise ContentTooLong(limit, len(content))
    return content


def _check_type(kind: str) -> str:
    if kind not in DOCUMENT_TYPES:
        raise invalid_field("type", "literal_error", "must be 'memory' or 'document'",
                            expected="'memory' or 'document'")
    return kind


def _summary(summary: str | None, content: str, length: int) -> str:
    summary = (summary or "").strip()
    return summary if summary else cut_summary(content=content, length=length)


# --- CRUD --------------------------------------------------------------------------------------------


async def create_document(
    *,
    db: AsyncSession,
    user_id: int,
    title: str,
    content: str,
    type: str = "memory",
    summary: str | None = None,
    tags: str | None = None,
    session_id: str | None = None,
    max_content_length: int = DEFAULT_MAX_CONTENT_LENGTH,
    summary_length: int = DEFAULT_SUMMARY_LENGTH,
    storage_limit: int = 0,
) -> AgentDocument:
    """``storage_limit``: the user's stored-bytes limit (0: none; see the module docstring)."""
    content = _check_content(content, max_content_length)
    row = AgentDocument(
        user_id=user_id,
        session_id=session_id,
        type=_check_type(type),
        title=_check_title(title),
        content=content,
        summary=_summary(summary, content, summary_length),
        tags=normalize_tags(tags),
    )
    db.add(row)
    await db.flush()
    await refuse_over_limit(db=db, user_id=user_id, limit=storage_limit)
    return row


async def get_document_by_id(*, db: AsyncSession, user_id: int, document_id: str) -> AgentDocument:
    stmt = select(AgentDocument).where(AgentDocument.id == document_id, AgentDocument.user_id == user_id)
    return await one_or_404(db, stmt, DocumentNotFound())


async def list_documents(
    *,
    db: AsyncSession,
    user_id: int,
    type: str | None = None,
    q: str | None = None,
    page: int = 1,
    page_size: int = 20,
    offset: int | None = None,
) -> DocumentPage:
    """Newest first, or ranked by relevance when ``q`` has terms. ``offset`` (if given) wins over
    ``page`` so a caller can resume exactly where a token budget cut a page short."""
    if type is not None:
        _check_type(type)
    start = offset if offset is not None else (page - 1) * page_size
    found = await search.search_documents(
        db=db, user_id=user_id, type=type, q=q or "", offset=start, limit=page_size
    )
    if found is None:  # no search terms: newest first
        scoped = select(AgentDocument).where(AgentDocument.user_id == user_id)
        counted = select(func.count()).select_from(AgentDocument).where(AgentDocument.user_id == user_id)
        if type is not None:
            scoped = scoped.where(AgentDocument.type == type)
            counted = counted.where(AgentDocument.type == type)
        stmt = scoped.order_by(AgentDocument.created_at.desc(), AgentDocument.id.desc())
        total = int((await db.execute(counted)).scalar_one())
        items = list((await db.execute(stmt.offset(start).limit(page_size))).scalars())
    else:
        items, total = found.items, found.total
    return DocumentPage(
        items=items,
        total=total,
        page=start // page_size + 1,
        page_size=page_size,
        has_more=start + len(items) < total,
        offset=start,
    )


def _checked_changes(changes: dict[str, Any], max_content_length: int) -> dict[str, Any]:
    """Validate ``changes`` and return the new values of the fields they set (the summary aside)."""
    unknown = set(changes) - set(EDITABLE_FIELDS)
    if unknown:
        raise invalid_field(sorted(unknown)[0], "not_editable", "cannot be changed")
    new: dict[str, Any] = {}
    if changes.get("title") is not None:
        new["title"] = _check_title(changes["title"])
    if changes.get("type") is not None:
        new["type"] = _check_type(changes["type"])
    if changes.get("content") is not None:
        new["content"] = _check_content(changes["content"], max_content_length)
    if "tags" in changes:
        new["tags"] = normalize_tags(changes["tags"])
    return new


async def update_document(
    *,
    db: AsyncSession,
    user_id: int,
    document_id: str,
    changes: dict[str, Any],
    max_content_length: int = HARD_MAX_CONTENT_LENGTH,
    summary_length: int = DEFAULT_SUMMARY_LENGTH,
    storage_limit: int = 0,
) -> AgentDocument:
    """Apply ``changes`` (any of title, content, type, summary, tags); a new content without a new summary
    gets a freshly cut summary (seed: update), an empty summary is cut from the content.

    One statement, ``UPDATE ... WHERE <owned> AND <something differs> RETURNING``: reading the row first
    cost an update a round trip and the ORM's loading, ~0.5 ms of a ~3.4 ms update on PostgreSQL at
    500,000 documents (docs/benchmarks.md). The state it replaces becomes the next version, written by the
    database in the same UPDATE (migration 0015). A change that changes nothing matches no row: it writes
    nothing, stores no version and keeps ``updated_at``; the row is then read to tell it from a miss.
    ``storage_limit``: the user's stored-bytes limit, checked after the UPDATE (0: none)."""
    new = _checked_changes(changes, max_content_length)
    doc = AgentDocument
    values: dict[str, Any] = dict(new)
    if "summary" in changes:
        content = new.get("content")
        if content is None and not (changes["summary"] or "").strip():  # cut from the stored content
            content = (await get_document_by_id(db=db, user_id=user_id, document_id=document_id)).content
        new["summary"] = values["summary"] = _summary(changes["summary"], content or "", summary_length)
    elif "content" in new:  # re-cut only when the content really changes (a summary of one's own stays)
        values["summary"] = case((doc.content.is_distinct_from(new["content"]),
                                  cut_summary(content=new["content"], length=summary_length)),
                                 else_=doc.summary)
    if not new:
        return await get_document_by_id(db=db, user_id=user_id, document_id=document_id)
    differs = or_(*(getattr(doc, field).is_distinct_from(value) for field, value in new.items()))
    stmt = (
        update(doc)
        .where(doc.id == document_id, doc.user_id == user_id, differs)
        .values(**values, updated_at=utcnow())
        .returning(doc)
        .execution_options(synchronize_session=False, populate_existing=True)
    )
    try:
        row = (await db.execute(stmt)).scalar_one_or_none()
    except IntegrityError as exc:  # two writers numbered the same version (only under stricter isolation)
        raise Conflict("the document changed at the same time; try again", code="document_conflict") from exc
    if row is None:
        return await get_document_by_id(db=db, user_id=user_id, document_id=document_id)
    await refuse_over_limit(db=db, user_id=user_id, limit=storage_limit)
    return row


async def delete_document(*, db: AsyncSession, user_id: int, document_id: str) -> None:
    """Hard delete; the database deletes its versions with it (ON DELETE CASCADE)."""
    row = await get_document_by_id(db=db, user_id=user_id, document_id=document_id)
    await db.delete(row)
    await db.flush()


# --- versions ----------------------------------------------------------------------------------------


async def list_versions(
    *, db: AsyncSession, user_id: int, document_id: str, offset: int = 0, limit: int = 20
) -> tuple[list[Row[*tuple[Any, ...]]], int]:
    """Newest version first, without the content (only its length)."""
    await get_document_by_id(db=db, user_id=user_id, document_id=document_id)
    v = AgentDocumentVersion
    owned = (v.document_id == document_id, AgentDocument.user_id == user_id)
    total_stmt = select(func.count()).select_from(v).join(AgentDocument, AgentDocument.id == v.document_id)
    total = int((await db.execute(total_stmt.where(*owned))).scalar_one())
    stmt = (
        select(v.version, v.type, v.title, v.summary, v.tags, v.created_at,
               func.length(v.content).label("content_length"))
        .join(AgentDocument, AgentDocument.id == v.document_id)
        .where(*owned)
        .order_by(v.version.desc())
        .offset(offset)
        .limit(limit)
    )
    return list((await db.execute(stmt)).all()), total


async def get_version(
    *, db: AsyncSession, user_id: int, document_id: str, version: int
) -> AgentDocumentVersion:
    await get_document_by_id(db=db, user_id=user_id, document_id=document_id)
    stmt = (
        select(AgentDocumentVersion)
        .join(AgentDocument, AgentDocument.id == AgentDocumentVersion.document_id)
        .where(
            AgentDocumentVersion.document_id == document_id,
            AgentDocumentVersion.version == version,
            AgentDocument.user_id == user_id,
        )
    )
    return await one_or_404(db, stmt, VersionNotFound(version))


async def restore_version(
    *, db: AsyncSession, user_id: int, document_id: str, version: int, storage_limit: int = 0
) -> AgentDocument:
    """Make ``version`` current again; the state it replaces becomes a new version, so a restore can
    itself be undone."""
    old = await get_version(db=db, user_id=user_id, document_id=document_id, version=version)
    changes = {"title": old.title, "content": old.content, "type": old.type,
               "summary": old.summary, "tags": old.tags}
    return await update_document(db=db, user_id=user_id, document_id=document_id, changes=changes,
                                 storage_limit=storage_limit)
