"""Admin API for model configurations."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from agentloft.auth.dependencies import AdminUser, CurrentUser
from agentloft.core.dependencies import DbSession, Paging, Rt
from agentloft.core.schemas import DbInt, Page
from agentloft.knowledge import embedding as knowledge_embedding
from agentloft.llm import service
from agentloft.llm.models import ModelKind
from agentloft.llm.presets import PRESETS
from agentloft.llm.schemas import (
    ModelConfigCreate,
    ModelConfigRead,
    ModelConfigUpdate,
    ModelPreset,
    ModelTestOptions,
    ModelTestResult,
    SetupStatus,
)

admin_router = APIRouter(prefix="/api/admin/models", tags=["admin"])
router = APIRouter(prefix="/api/setup", tags=["setup"])


@router.get("/status", response_model=SetupStatus)
async def setup_status(_: CurrentUser, db: DbSession) -> SetupStatus:
    """Any signed-in user may ask whether an enabled model exists (users see a notice until one does)."""
    return SetupStatus(has_model=await service.has_enabled_model(db=db))


@admin_router.get("/presets", response_model=Page[ModelPreset])
async def list_presets(_: AdminUser) -> Page[ModelPreset]:
    """Every preset, as one page of the seeds' list shape."""
    return Page[ModelPreset].whole(PRESETS)


@admin_router.get("", response_model=Page[ModelConfigRead])
async def list_models(
    _: AdminUser, db: DbSession, paging: Paging,
    kind: Annotated[ModelKind | None, Query(description="Only chat or only embedding models.")] = None,
) -> Page[ModelConfigRead]:
    rows, total = await service.list_models(db=db, page=paging, kind=kind)
    return Page[ModelConfigRead].of(await service.read_models(db=db, rows=rows), total, paging)


@admin_router.post("", response_model=ModelConfigRead, status_code=201)
async def create_model(body: ModelConfigCreate, _: AdminUser, rt: Rt, db: DbSession) -> ModelConfigRead:
    (read,) = await service.read_models(db=db, rows=[await service.create_model(db=db, box=rt.box, data=body)])
    return read


@admin_router.get("/{model_id}", response_model=ModelConfigRead)
async def read_model(model_id: DbInt, _: AdminUser, db: DbSession) -> ModelConfigRead:
    (read,) = await service.read_models(db=db, rows=[await service.get_model(db=db, model_id=model_id)])
    return read


@admin_router.put("/{model_id}", response_model=ModelConfigRead)
async def update_model(
    model_id: DbInt, body: ModelConfigUpdate, _: AdminUser, rt: Rt, db: DbSession
) -> ModelConfigRead:
    """An embedding model that now answers at another endpoint or by another model name makes other
    vectors: knowledge drops the old ones and embeds again (``knowledge.embedding.model_changed``)."""
    before = await service.get_model(db=db, model_id=model_id)
    endpoint = (before.base_url, before.model)
    row = await service.update_model(db=db, box=rt.box, model_id=model_id, data=body)
    if row.kind == "embedding" and (row.base_url, row.model) != endpoint:
        await knowledge_embedding.model_changed(db, model_id=row.id)
    (read,) = await service.read_models(db=db, rows=[row])
    return read


@admin_router.delete("/{model_id}", status_code=204)
async def delete_model(model_id: DbInt, _: AdminUser, db: DbSession) -> Response:
    await service.delete_model(db=db, model_id=model_id)
    return Response(status_code=204)


@admin_router.post("/{model_id}/test", response_model=ModelTestResult)
async def test_model(
    model_id: DbInt, _: AdminUser, rt: Rt, db: DbSession, options: ModelTestOptions | None = None
) -> ModelTestResult:
    row = await service.get_model(db=db, model_id=model_id)
    result = await service.test_model(row=row, box=rt.box, models=rt.models)
    if result.ok and options is not None and options.activate:
        await service.make_default(db=db, row=row)
    return result
