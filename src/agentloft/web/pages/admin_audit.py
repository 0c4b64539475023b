"""``/admin/audit``: the audit trail as a table, newest first, rendered on the server (no script): a GET
form of filters (type, account, from and to days), an "Older" link on the API's keyset cursor, and a JSONL
export link carrying the same filters (``/api/admin/audit.jsonl``).

Decisions the issue leaves open:
- The filters read as the API's do (``audit.router.filter_of``), but ``from`` and ``to`` take days only:
  they are what the form's date fields send (``to`` includes its whole day, in UTC), and a field sent
  empty means "any". A bad value is the error page with the API's 422.
- The account filter is a select of the accounts (the first ``USER_CHOICES`` by id, more than a team
  has); an account not among them (or deleted since) is still offered when the address names it, so the
  actor links of the table (``?userId=N``) always show what they filter.
- A page shows ``PAGE_SIZE`` events unless the address says ``limit`` (as the API's, 1 to 200).
- Times are shown in UTC, as the trail and its filters count them.
- Each row's detail reads in one line (an admin change: which rows, each changed column's before → after;
  any other event: its detail's short values); the whole detail expands below it (``<details>``): an
  admin change as a table of columns before and after, and the event's JSON.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from typing import Annotated, Any, cast
from urllib.parse import urlencode

from fastapi import Query, Request, Response
from pydantic import BeforeValidator, Field

from agentloft.audit import service as audit_service
from agentloft.audit.models import AuditEvent
from agentloft.audit.router import TypeQ, filter_of
from agentloft.auth import service as auth_service
from agentloft.core.dependencies import DbSession
from agentloft.core.schemas import PageParams
from agentloft.web.deps import AdminPage, page_router
from agentloft.web.templating import render_page

router = page_router()

PAGE_SIZE = 50
USER_CHOICES = 1000
SHORT = 60  # characters of one value in a row's one-line detail
LINE = 200  # characters of that whole line



def _blank(value: Any) -> Any:
    """A field the form sent empty (``userId=&from=``: "any") as not given."""
    return None if value == "" else value


Blank = BeforeValidator(_blank)
AccountQ = Annotated[Annotated[int, Field(ge=1, le=2**31 - 1)] | None, Blank,
                     Query(alias="userId", description="Only this account's events.")]
DayFromQ = Annotated[date | None, Blank, Query(alias="from", description="The first day shown (UTC).")]
DayToQ = Annotated[date | None, Blank, Query(alias="to", description="The last day shown (UTC, inclusive).")]
CursorQ = Annotated[str | None, Query(max_length=20)]
LimitQ = Annotated[int, Query(ge=1, le=200, description="Events a page shows (kept by its links).")]


@dataclass(frozen=True)
class FieldChange:
    name: str
    before: str | None  # None: the column had no value before (a row added), or the statement set it
    after: str | None


@dataclass(frozen=True)
class RowChange:
    """One row (or one statement) an admin change wrote: ``users #3 update`` and its columns."""

    title: str
    fields: list[FieldChange]


@dataclass(frozen=True)
class EventView:
    event: AuditEvent
    line: str
    changes: list[RowChange]
    json: str


def short(value: Any, limit: int = SHORT) -> str:
    """A value as one short piece of text (JSON for anything but text), cut with an ellipsis."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _cut(text: str) -> str:
    return text if len(text) <= LINE else text[: LINE - 1] + "…"


def _row_change(change: dict[str, Any]) -> RowChange:
    before = cast("dict[str, Any]", change.get("before") or {})
    after = cast("dict[str, Any]", change.get("after") or change.get("values") or {})
    key = change.get("id")
    if key is None and change.get("op") == "insert":  # a new row's id is known only once it is written
        key = after.get("id")
    ident = f" #{short(key)}" if key is not None else ""
    names = list(dict.fromkeys([*before, *after]))
    fields = [FieldChange(n, short(before[n]) if n in before else None, short(after[n]) if n in after else None)
              for n in names]
    return RowChange(f"{change.get('table', '?')}{ident} {change.get('op', '')}".strip(), fields)


def _change_line(rows: list[RowChange]) -> str:
    parts: list[str] = []
    for row in rows:
        shown = [f"{f.name}: {f.before} → {f.after}" if f.before is not None and f.after is not None
                 else f"{f.name}: {f.after if f.after is not None else f.before}" for f in row.fields[:4]]
        more = " …" if len(row.fields) > 4 else ""
        parts.append(f"{row.title} ({', '.join(shown)}{more})" if shown else row.title)
    return _cut("; ".join(parts))


def view(event: AuditEvent) -> EventView:
    """What a row of the table shows of ``event``."""
    detail = event.detail or {}
    changes: list[RowChange] = []
    if event.type == "admin.change":
        changes = [_row_change(c) for c in cast("list[dict[str, Any]]", detail.get("changes") or [])
                   if isinstance(c, dict)]
        line = _change_line(changes)
    else:
        line = _cut(", ".join(f"{k}: {short(v)}" for k, v in detail.items() if v not in (None, "", [], {})))
    return EventView(event, line, changes, json.dumps(detail, ensure_ascii=False, indent=2, default=str))


async def _accounts(db: DbSession, chosen: int | None) -> list[tuple[int, str]]:
    users, _ = await auth_service.list_users(db=db, page=PageParams(page=1, page_size=USER_CHOICES))
    accounts = [(u.id, u.username) for u in users]
    if chosen is not None and all(uid != chosen for uid, _ in accounts):
        accounts.append((chosen, f"#{chosen}"))
    return accounts


@router.get("/admin/audit")
async def audit_page(
    request: Request, _: AdminPage, db: DbSession, type_: TypeQ = None, user_id: AccountQ = None,
    since: DayFromQ = None, until: DayToQ = None, cursor: CursorQ = None, limit: LimitQ = PAGE_SIZE,
) -> Response:
    """One page of the trail under the filters the address names (see the module docstring)."""
    rows, next_cursor = await audit_service.list_events(
        db=db, where=filter_of(type_, user_id, since, until, cursor), limit=limit)
    filters = {key: str(value) for key, value in
               {"type": type_, "userId": user_id, "from": since, "to": until}.items() if value}
    query = urlencode(filters)
    paging = {**filters, **({"limit": str(limit)} if limit != PAGE_SIZE else {})}
    return render_page(
        request, "admin/audit.html", section="audit", events=[view(r) for r in rows],
        types=audit_service.EVENT_TYPES, accounts=await _accounts(db, user_id), filters=filters,
        export_url="/api/admin/audit.jsonl" + (f"?{query}" if query else ""),
        older_url=f"/admin/audit?{urlencode({**paging, 'cursor': next_cursor})}" if next_cursor else None,
        newest_url=f"/admin/audit?{urlencode(paging)}".rstrip("?") if cursor else None,
    )
