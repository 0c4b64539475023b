"""HTTP for the audit trail: one page of events (newest first, keyset pagination) and the JSONL export.

``from`` and ``to`` take a day (``2026-12-03``: ``to`` includes that whole day, in UTC) or a moment
(ISO 8601; ``to`` excludes it). The export streams every matching event, newest first, one JSON object a
line, in the same shape as the page's items, read in batches from a session of its own (the response
outlives the request's)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from agentloft.audit import service
from agentloft.audit.schemas import AuditEventRead, AuditPage
from agentloft.auth.dependencies import AdminUser
from agentloft.core.dependencies import DbSession, Rt
from agentloft.core.errors import invalid_field

admin_router = APIRouter(prefix="/api/admin", tags=["admin"])

When = date | datetime


def _moment(value: When | None, *, end: bool) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    start = datetime.combine(value, time(), tzinfo=UTC)
    return start + timedelta(days=1) if end else start


def filter_of(type_: str | None, user_id: int | None, since: When | None, until: When | None,
            cursor: str | None) -> service.AuditFilter:
    """The query's filters as the service takes them (the API's and Admin → Audit's one reading)."""
    begin, stop = _moment(since, end=False), _moment(until, end=True)
    if begin is not None and stop is not None and stop <= begin:
        raise invalid_field("to", "literal_error", "must be after from", expected="after from")
    return service.AuditFilter(type=type_ or None, user_id=user_id, since=begin, until=stop,
                               before_id=service.parse_cursor(cursor))


TypeQ = Annotated[str | None, Query(alias="type", max_length=40, description="Only events of this type.")]
UserQ = Annotated[int | None, Query(alias="userId", ge=1, le=2**31 - 1, description="Only this account's.")]
FromQ = Annotated[When | None, Query(alias="from", description="A day or an ISO 8601 moment (inclusive).")]
ToQ = Annotated[When | None, Query(alias="to", description="A day (inclusive) or a moment (exclusive).")]


@admin_router.get("/audit", response_model=AuditPage)
async def list_audit(
    _: AdminUser, db: DbSession, type_: TypeQ = None, user_id: UserQ = None, since: FromQ = None,
    until: ToQ = None, cursor: Annotated[str | None, Query(max_length=20)] = None,
    limit: Annotated[int, Query(ge=1, le=200)] = 50,
) -> AuditPage:
    rows, next_cursor = await service.list_events(db=db, where=filter_of(type_, user_id, since, until, cursor),
                                                  limit=limit)
    return AuditPage(items=[AuditEventRead.model_validate(r) for r in rows], next_cursor=next_cursor)


@admin_router.get("/audit.jsonl")
async def export_audit(
    _: AdminUser, rt: Rt, type_: TypeQ = None, user_id: UserQ = None, since: FromQ = None, until: ToQ = None,
) -> StreamingResponse:
    where = filter_of(type_, user_id, since, until, None)

    async def lines() -> AsyncIterator[str]:
        async with rt.db.session() as db:
            async for row in service.export(db=db, where=where):
                item = AuditEventRead.model_validate(row).model_dump(mode="json", by_alias=True)
                yield json.dumps(item, ensure_ascii=False) + "\n"

    return StreamingResponse(lines(), media_type="application/jsonl",
                             headers={"Content-Disposition": 'attachment; filename="audit.jsonl"'})
