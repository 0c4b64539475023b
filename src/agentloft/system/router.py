"""Admin API for instance settings, and the health probes."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from agentloft.auth.dependencies import AdminUser
from agentloft.chat import service as chat_service
from agentloft.core import metrics as prometheus
from agentloft.core.dependencies import DbSession, Rt
from agentloft.core.errors import NotFound
from agentloft.system import health as probes
from agentloft.system import service
from agentloft.system.schemas import InstanceSettings, InstanceSettingsUpdate

router = APIRouter(tags=["system"])


@router.get("/api/health")
async def health() -> dict[str, str]:
    """Liveness probe (HEAD too, as uptime checks ask); also hands a browser its CSRF cookie."""
    return {"status": "ok"}


router.add_api_route("/api/health", health, methods=["HEAD"], include_in_schema=False)


@router.get("/healthz", include_in_schema=False)
async def healthz() -> dict[str, str]:
    """Alive: the process answers (``system.health``)."""
    return {"status": "ok"}


@router.get("/readyz", include_in_schema=False)
async def readyz(rt: Rt) -> JSONResponse:
    """Ready: database, Redis when configured, schema current (``system.health``); 503 names what is not."""
    failing = await probes.failing(rt.db, rt.redis)
    if failing:
        return JSONResponse({"status": "unavailable", "failing": failing}, status_code=503)
    return JSONResponse({"status": "ready"})


for _probe in (healthz, readyz):
    router.add_api_route(f"/{_probe.__name__}", _probe, methods=["HEAD"], include_in_schema=False)


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request, rt: Rt) -> Response:
    """Prometheus metrics (``core.metrics``): 404 while ``AGENTLOFT_METRICS`` is off; then to loopback
    clients that no proxy forwarded, and to others with the bearer token."""
    if not rt.metrics.enabled:
        raise NotFound("there is nothing at this address")
    host = request.client.host if request.client else None
    forwarded = any(name in request.headers for name in prometheus.FORWARDING_HEADERS)
    prometheus.check_scraper(host, request.headers.get("authorization"), rt.settings.metrics_token,
                             forwarded=forwarded)
    async with rt.db.read_session() as db:
        pending = await chat_service.count_pending_approvals(db=db)
    return Response(rt.metrics.exposition(pending), media_type=prometheus.CONTENT_TYPE)


@router.get("/api/admin/settings", response_model=InstanceSettings)
async def read_settings(_: AdminUser, rt: Rt, db: DbSession) -> InstanceSettings:
    return await service.get_settings(db=db, settings=rt.settings)


@router.put("/api/admin/settings", response_model=InstanceSettings)
async def write_settings(
    body: InstanceSettingsUpdate, _: AdminUser, rt: Rt, db: DbSession
) -> InstanceSettings:
    return await service.update_settings(db=db, settings=rt.settings, data=body)
