"""The audit trail's queries: recording events (in the caller's transaction), listing and exporting them,
verifying the chain and retention. Keyword-only functions; the only place audit queries are written.

Recording is never best effort: an event is written in the transaction of the action it records, so a
failure to write it fails the action and rolls it back (the issue: "if it cannot be written, the action
fails"). Actions that write nothing to the database (a refused sign-in) record in a transaction of their
own before they answer, and answer 500 if that fails.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.audit import capture, chain
from agentloft.audit.chain import Actor, Entry, Verdict
from agentloft.audit.models import AuditChain, AuditEvent
from agentloft.core.db import rows_matched, utcnow
from agentloft.core.errors import invalid_field

__all__ = ["EVENT_TYPES", "Actor", "AuditFilter", "Entry", "Verdict", "export", "list_events", "purge", "record",
           "record_changes", "record_many", "verify"]

EVENT_TYPES = ("auth.sign_in", "auth.sign_in_failed", "auth.sign_out", "admin.change", "tool.call",
               "tool.approval", "a2a.delegation", "budget.refused")
"""Every type the trail writes (the issue's list), in the order Admin → Audit offers them as a filter."""


async def record(*, db: AsyncSession, type: str, actor: Actor, target: str | None = None,
                 detail: dict[str, Any] | None = None) -> int:
    """Append one event in ``db``'s transaction (call it last, just before the commit: ``audit.chain``)."""
    return (await chain.append(db, [Entry(type=type, actor=actor, target=target, detail=detail)]))[0]


async def record_many(*, db: AsyncSession, entries: Sequence[Entry]) -> list[int]:
    """Append several events in one go (a turn's tool calls), three statements whatever their number."""
    return await chain.append(db, entries)


async def record_changes(*, db: AsyncSession, actor: Actor, target: str, detail: dict[str, Any]) -> int | None:
    """An ``admin.change`` event of what ``db`` wrote since ``capture.watch`` (its redacted ``changes`` added
    to ``detail``), appended in ``db``'s transaction; None, and nothing written, when it changed nothing.
    Every admin change is recorded through it: the admin-only endpoints' and the command line's."""
    changes = await capture.changes(db)
    if not changes:
        return None
    return await record(db=db, type="admin.change", actor=actor, target=target, detail={**detail, "changes": changes})


@dataclass(frozen=True)
class AuditFilter:
    type: str | None = None
    user_id: int | None = None
    since: datetime | None = None  # inclusive
    until: datetime | None = None  # exclusive
    before_id: int | None = None  # the keyset cursor: only events older than this one


def _query(where: AuditFilter) -> Any:
    stmt = select(AuditEvent)
    if where.type:
        stmt = stmt.where(AuditEvent.type == where.type)
    if where.user_id is not None:
        stmt = stmt.where(AuditEvent.actor_id == where.user_id)
    if where.since is not None:
        stmt = stmt.where(AuditEvent.at >= where.since)
    if where.until is not None:
        stmt = stmt.where(AuditEvent.at < where.until)
    if where.before_id is not None:
        stmt = stmt.where(AuditEvent.id < where.before_id)
    return stmt.order_by(AuditEvent.id.desc())


def parse_cursor(cursor: str | None) -> int | None:
    """A page's ``nextCursor`` back into the id it stands for; 422 for anything else."""
    if cursor is None or cursor == "":
        return None
    if not cursor.isdigit() or len(cursor) > 18:
        raise invalid_field("cursor", "literal_error", "not a cursor this list gave", expected="nextCursor")
    return int(cursor)


async def list_events(*, db: AsyncSession, where: AuditFilter, limit: int) -> tuple[list[AuditEvent], str | None]:
    """One page, newest first, and the cursor of the next (None: this was the last)."""
    rows = list((await db.execute(_query(where).limit(limit + 1))).scalars())
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (str(rows[-1].id) if more and rows else None)


EXPORT_BATCH = 500


async def export(*, db: AsyncSession, where: AuditFilter) -> AsyncIterator[AuditEvent]:
    """Every matching event, newest first, read in keyset batches (an export never holds the whole trail)."""
    before = where.before_id
    while True:
        batch_filter = AuditFilter(type=where.type, user_id=where.user_id, since=where.since, until=where.until,
                                   before_id=before)
        rows, cursor = await list_events(db=db, where=batch_filter, limit=EXPORT_BATCH)
        for row in rows:
            yield row
        if cursor is None:
            return
        before = int(cursor)
        db.expunge_all()


async def verify(*, db: AsyncSession) -> Verdict:
    return await chain.verify(db)


async def purge(*, db: AsyncSession, older_than: timedelta) -> int:
    """Delete the events older than ``older_than`` and move the chain's recorded start to the first event
    kept, so ``verify`` still checks what is left. Takes the chain head's lock first, as appending does,
    so no event is appended while the start moves. How many were deleted."""
    head = (await db.execute(
        update(AuditChain).where(AuditChain.id == chain.HEAD_ID).values(last_id=AuditChain.last_id)
        .returning(AuditChain.last_id, AuditChain.last_hash)
    )).one()
    cutoff = utcnow() - older_than
    last_old = (await db.execute(
        select(AuditEvent.id).where(AuditEvent.at < cutoff).order_by(AuditEvent.id.desc()).limit(1)
    )).scalar_one_or_none()
    if last_old is None:
        return 0
    first_kept = (await db.execute(
        select(AuditEvent.id, AuditEvent.prev_hash).where(AuditEvent.id > last_old).order_by(AuditEvent.id).limit(1)
    )).first()
    start_id, start_hash = (first_kept[0], first_kept[1]) if first_kept else (head.last_id + 1, head.last_hash)
    deleted = await rows_matched(db, delete(AuditEvent).where(AuditEvent.id <= last_old))
    await db.execute(update(AuditChain).where(AuditChain.id == chain.HEAD_ID)
                     .values(start_id=start_id, start_hash=start_hash))
    return deleted
