"""The hash chain: how an event's hash is made, how events are appended in one order, how it is checked.

An event's hash is SHA-256 over the previous event's hash and the canonical JSON of the event's own fields
(id, at, type, actor, ip, target, detail: sorted keys, no spaces, UTF-8). Changing, removing or inserting a
row breaks the link at that row or the next; so does cutting the tail, which the chain head (``AuditChain``)
still names.

Appending is serialised by the chain head row: an ``UPDATE`` that takes the next id locks it until the
transaction ends, on PostgreSQL for every worker (a row lock), on SQLite by its single writer. The lock is
held to the end of the caller's transaction, which is what keeps the chain one line: the next appender
reads the hash this one wrote only once it committed (or rolled back, and then its id is taken again).
Callers therefore append at the end of their transactions, just before the commit (bench/audit_append.py
measures what it costs a write).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.audit.models import AuditChain, AuditEvent
from agentloft.core.db import storable, table_of, utcnow

HEAD_ID = 1


@dataclass(frozen=True)
class Actor:
    """Who did it, as the trail records it: an account (id and name, kept as it was then) and the address."""

    id: int | None = None
    name: str | None = None
    ip: str | None = None


@dataclass(frozen=True)
class Entry:
    """One event to append: its type, who, what it was about, and its details (JSON-ready, redacted)."""

    type: str
    actor: Actor
    target: str | None = None
    detail: dict[str, Any] | None = None
    at: datetime | None = None


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="microseconds")


def digest(prev_hash: str, fields: dict[str, Any]) -> str:
    """The hash of an event with these fields following one whose hash is ``prev_hash``."""
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256((prev_hash + canonical).encode()).hexdigest()


def fields_of(row: AuditEvent | dict[str, Any]) -> dict[str, Any]:
    """The fields an event's hash covers, from a stored row or the values about to be stored."""
    values: dict[str, Any] = row if isinstance(row, dict) else {c: getattr(row, c) for c in _HASHED}
    return {"id": values["id"], "at": _stamp(values["at"]), "type": values["type"], "actorId": values["actor_id"],
            "actorName": values["actor_name"], "ip": values["ip"], "target": values["target"],
            "detail": values["detail"]}


_HASHED = ("id", "at", "type", "actor_id", "actor_name", "ip", "target", "detail")


async def append(db: AsyncSession, entries: Sequence[Entry]) -> list[int]:
    """Append ``entries`` in order within the caller's transaction; their ids. Three statements whatever
    their number: take the ids (locking the head), insert the rows, move the head."""
    if not entries:
        return []
    taken = (await db.execute(
        update(AuditChain).where(AuditChain.id == HEAD_ID)
        .values(last_id=AuditChain.last_id + len(entries))
        .returning(AuditChain.last_id, AuditChain.last_hash)
    )).one()
    first_id, prev = taken.last_id - len(entries) + 1, taken.last_hash
    now = utcnow()
    rows: list[dict[str, Any]] = []
    for offset, entry in enumerate(entries):
        row = {"id": first_id + offset, "at": entry.at or now, "type": entry.type, "actor_id": entry.actor.id,
               "actor_name": entry.actor.name, "ip": entry.actor.ip, "target": entry.target,
               "detail": storable(entry.detail or {})}
        row["prev_hash"] = prev
        row["hash"] = prev = digest(prev, fields_of(row))
        rows.append(row)
    await db.execute(insert(table_of(AuditEvent)), rows)
    await db.execute(update(AuditChain).where(AuditChain.id == HEAD_ID).values(last_hash=prev))
    return [r["id"] for r in rows]


@dataclass(frozen=True)
class Verdict:
    """What ``verify`` found: ``broken_at`` is the id of the first event that does not follow (None: OK)."""

    checked: int
    broken_at: int | None = None
    reason: str | None = None


VERIFY_BATCH = 1000


async def verify(db: AsyncSession) -> Verdict:
    """Walk the kept chain from its recorded start to its head, in batches, and say where it breaks."""
    head = (await db.execute(select(AuditChain).where(AuditChain.id == HEAD_ID))).scalar_one()
    expected_id, prev, checked = head.start_id, head.start_hash, 0
    while True:
        batch = list((await db.execute(
            select(AuditEvent).where(AuditEvent.id >= expected_id).order_by(AuditEvent.id).limit(VERIFY_BATCH)
        )).scalars())
        for row in batch:
            if row.id != expected_id:
                return Verdict(checked, expected_id, f"event {expected_id} is missing")
            if row.prev_hash != prev:
                return Verdict(checked, row.id, "it does not name the hash of the event before it")
            if digest(prev, fields_of(row)) != row.hash:
                return Verdict(checked, row.id, "its fields do not match its hash")
            prev, expected_id, checked = row.hash, row.id + 1, checked + 1
        if len(batch) < VERIFY_BATCH:
            break
        db.expunge_all()
    if expected_id - 1 != head.last_id or prev != head.last_hash:
        return Verdict(checked, expected_id, "events at the end of the chain are missing")
    return Verdict(checked)
