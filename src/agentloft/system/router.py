"""Admin API for instance settings."""

from __future__ import annotations

from fastapi import APIRouter

from agentloft.auth.dependencies import AdminUser
from agentloft.core.dependencies import DbSession, Rt
from agentloft.system import service
from agentloft.system.schemas import InstanceSettings, InstanceSettingsUpdate

router = APIRouter(tags=["system"])


@router.get("/api/health")
async def health() -> dict[str, str]:
    """Liveness probe (HEAD too, as uptime checks ask); also hands a browser its CSRF cookie."""
    return {"status": "ok"}


router.add_api_route("/api/health", health, methods=["HEAD"], include_in_schema=False)


@router.get("/api/admin/settings", response_model=InstanceSettings)
async def read_settings(_: AdminUser, rt: Rt, db: DbSession) -> InstanceSettings:
    return await service.get_settings(db=db, settings=rt.settings)


@router.put("/api/admin/settings", response_model=InstanceSettings)
async def write_settings(
    body: InstanceSettingsUpdate, _: AdminUser, rt: Rt, db: DbSession
) -> InstanceSettings:
    return await service.update_settings(db=db, settings=rt.settings, data=body)
