"""Usage and budgets over HTTP (issue 33's contract).

- ``GET /api/usage?from&to&groupBy=day|agent|model``: the caller's own usage.
- ``GET /api/usage/budgets``: the budgets that apply to the caller, with what is used and left.
- ``GET /api/admin/usage?from&to&groupBy=user|group|agent|model|day`` and ``GET /api/admin/usage.csv``: everyone's.
- ``POST/GET /api/admin/budgets``, ``GET/PUT/DELETE /api/admin/budgets/{id}``.

``from`` and ``to`` are UTC days, both included; without them, the last 30 days up to today.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response

from agentloft.auth.dependencies import AdminUser, CurrentUser
from agentloft.core.dependencies import DbSession, Rt
from agentloft.core.errors import invalid_field
from agentloft.core.schemas import DbInt
from agentloft.usage import budgets, service
from agentloft.usage.schemas import BudgetCreate, BudgetPage, BudgetRead, BudgetStandings, UsageReport

router = APIRouter(prefix="/api/usage", tags=["usage"])
admin_router = APIRouter(prefix="/api/admin", tags=["admin"])

DEFAULT_DAYS = 30
MAX_DAYS = 366

From = Annotated[date | None, Query(alias="from", description="First UTC day (YYYY-MM-DD).")]
To = Annotated[date | None, Query(alias="to", description="Last UTC day, included (YYYY-MM-DD).")]
OwnGroupBy = Annotated[Literal["day", "agent", "model"], Query(alias="groupBy")]
AdminGroupBy = Annotated[Literal["user", "group", "agent", "model", "day"], Query(alias="groupBy")]


def _range(start: date | None, end: date | None) -> tuple[date, date]:
    """The days asked for, or the last ``DEFAULT_DAYS``; a reversed or over-long range is a 422."""
    end = end or service.today()
    start = start or end - timedelta(days=DEFAULT_DAYS - 1)
    if start > end:
        raise invalid_field("from", "date_range_reversed", "must not be after 'to'")
    if (end - start).days >= MAX_DAYS:
        raise invalid_field("from", "date_range_too_long", f"at most {MAX_DAYS} days", max_days=MAX_DAYS)
    return start, end


@router.get("", response_model=UsageReport)
async def own_usage(user: CurrentUser, db: DbSession, start: From = None, end: To = None,
                    group_by: OwnGroupBy = "day") -> UsageReport:
    first, last = _range(start, end)
    return await service.report(db=db, start=first, end=last, group_by=group_by, user_id=user.id)


@router.get("/budgets", response_model=BudgetStandings)
async def own_budgets(user: CurrentUser, rt: Rt, db: DbSession) -> BudgetStandings:
    found = await budgets.standings(rt, db, user_id=user.id)
    return BudgetStandings(items=[s.read() for s in found])


@admin_router.get("/usage", response_model=UsageReport)
async def all_usage(_: AdminUser, db: DbSession, start: From = None, end: To = None,
                    group_by: AdminGroupBy = "user") -> UsageReport:
    first, last = _range(start, end)
    return await service.report(db=db, start=first, end=last, group_by=group_by)


@admin_router.get("/usage.csv")
async def all_usage_csv(_: AdminUser, db: DbSession, start: From = None, end: To = None,
                        group_by: AdminGroupBy = "user") -> Response:
    first, last = _range(start, end)
    found = await service.report(db=db, start=first, end=last, group_by=group_by)
    name = f"usage-{group_by}-{first.isoformat()}-{last.isoformat()}.csv"
    return Response(service.report_csv(found), media_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@admin_router.get("/budgets", response_model=BudgetPage)
async def list_budgets(_: AdminUser, db: DbSession) -> BudgetPage:
    return BudgetPage(items=[BudgetRead.model_validate(b) for b in await budgets.list_budgets(db=db)])


@admin_router.post("/budgets", response_model=BudgetRead, status_code=201)
async def create_budget(body: BudgetCreate, _: AdminUser, db: DbSession) -> BudgetRead:
    return BudgetRead.model_validate(await budgets.create_budget(db=db, data=body))


@admin_router.get("/budgets/{budget_id}", response_model=BudgetRead)
async def read_budget(budget_id: DbInt, _: AdminUser, db: DbSession) -> BudgetRead:
    return BudgetRead.model_validate(await budgets.get_budget(db=db, budget_id=budget_id))


@admin_router.put("/budgets/{budget_id}", response_model=BudgetRead)
async def replace_budget(budget_id: DbInt, body: BudgetCreate, _: AdminUser, db: DbSession) -> BudgetRead:
    return BudgetRead.model_validate(await budgets.replace_budget(db=db, budget_id=budget_id, data=body))


@admin_router.delete("/budgets/{budget_id}", status_code=204)
async def delete_budget(budget_id: DbInt, _: AdminUser, db: DbSession) -> Response:
    await budgets.delete_budget(db=db, budget_id=budget_id)
    return Response(status_code=204)
