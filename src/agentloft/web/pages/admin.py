"""Admin pages for users, models, agents and instance settings (admins only; others get a 403 page).

Each page is a shell: its module script loads and changes data through the admin APIs, so there is one
source of truth for validation and error messages.
"""

from __future__ import annotations

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from agentloft.web.deps import AdminPage, page_router
from agentloft.web.templating import render_page

router = page_router()


@router.get("/admin")
async def admin_home(_: AdminPage) -> RedirectResponse:
    return RedirectResponse("/admin/agents", status_code=303)


@router.get("/admin/users")
async def users_page(request: Request, _: AdminPage) -> Response:
    return render_page(request, "admin/users.html", section="users")


@router.get("/admin/groups")
async def groups_page(request: Request, _: AdminPage) -> Response:
    return render_page(request, "admin/groups.html", section="groups")


@router.get("/admin/models")
async def models_page(request: Request, _: AdminPage) -> Response:
    return render_page(request, "admin/models.html", section="models")


@router.get("/admin/agents")
async def agents_page(request: Request, _: AdminPage) -> Response:
    return render_page(request, "admin/agents.html", section="agents")


@router.get("/admin/settings")
async def settings_page(request: Request, _: AdminPage) -> Response:
    return render_page(request, "admin/settings.html", section="settings")


@router.get("/admin/usage")
async def usage_page(request: Request, _: AdminPage) -> Response:
    """Tokens and cost per day as charts, and everyone's usage by user, group, agent or model as a table
    (``/api/admin/usage``; the vendored uPlot draws the charts)."""
    return render_page(request, "admin/usage.html", section="usage")
