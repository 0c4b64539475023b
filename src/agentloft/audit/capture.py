"""What an admin's request changed, from the request's own database session: one place for every
admin-only endpoint (``auth.dependencies.AdminUser`` records it), so a new admin route is on the trail
without a line of its own.

The ORM's flushes say which rows were added, changed (each changed column's value before and after) or
deleted; a Core ``UPDATE``/``DELETE``/``INSERT`` run through the session is kept as its table and bound
values. Everything is redacted (``audit.redact``) before it is kept. Writes an endpoint makes through
another session (an MCP server's tool list fetched anew) are not this request's change and are not kept.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ClauseElement, event, inspect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import ORMExecuteState, Session

from agentloft.audit.redact import redact

_KEY = "audit_changes"
_OWN_TABLES = frozenset({"audit_events", "audit_chain"})
_NOISE = frozenset({"created_at", "updated_at"})  # written on every save; the event's own time says when


def _columns(obj: Any) -> dict[str, Any]:
    state = inspect(obj)
    return {attr.key: state.dict.get(attr.key) for attr in state.mapper.column_attrs if attr.key not in _NOISE}


def _changed(obj: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    state = inspect(obj)
    for column in state.mapper.column_attrs:
        if column.key in _NOISE:
            continue
        history = state.attrs[column.key].history
        if history.has_changes():
            before[column.key] = history.deleted[0] if history.deleted else None
            after[column.key] = history.added[0] if history.added else None
    return before, after


def _row(obj: Any, op: str) -> dict[str, Any] | None:
    table = getattr(obj, "__tablename__", type(obj).__name__)
    if table in _OWN_TABLES:
        return None
    identity = inspect(obj).identity
    entry: dict[str, Any] = {"table": table, "op": op,
                             "id": identity[0] if identity and len(identity) == 1 else identity}
    if op == "insert":
        entry["after"] = _columns(obj)
    elif op == "delete":
        entry["before"] = _columns(obj)
    else:
        before, after = _changed(obj)
        if not after:
            return None
        entry["before"], entry["after"] = before, after
    return redact(entry)


def _after_flush(session: Session, _context: Any) -> None:
    changes: list[dict[str, Any]] = session.info[_KEY]
    for op, objs in (("insert", session.new), ("update", session.dirty), ("delete", session.deleted)):
        changes.extend(row for obj in objs if (row := _row(obj, op)) is not None)


def _statement(state: ORMExecuteState) -> None:
    if not (state.is_update or state.is_delete or state.is_insert):
        return
    table = getattr(getattr(state.statement, "table", None), "name", None)
    if table is None or table in _OWN_TABLES:
        return
    op = "update" if state.is_update else "delete" if state.is_delete else "insert"
    statement = state.statement
    params = statement.compile().params if isinstance(statement, ClauseElement) else {}
    state.session.info[_KEY].append(redact({"table": table, "op": op, "values": params}))


def watch(db: AsyncSession) -> None:
    """Start keeping what ``db`` writes from now on (``changes`` reads it)."""
    session = db.sync_session
    if _KEY in session.info:
        return
    session.info[_KEY] = []
    event.listen(session, "after_flush", _after_flush)
    event.listen(session, "do_orm_execute", _statement)


async def changes(db: AsyncSession) -> list[dict[str, Any]]:
    """What ``db`` wrote since ``watch``, pending changes flushed first."""
    await db.flush()
    return list(db.sync_session.info.get(_KEY, []))
