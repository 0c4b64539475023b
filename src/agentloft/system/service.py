"""Read and write instance settings. The environment gives defaults; a stored value overrides it.

``embeddingModelId`` has no environment default (none: knowledge search is lexical). Only an embedding
model can be chosen (a chat model or an unknown id is a 422); ``null`` clears it. Choosing another model
queues the job that embeds every knowledge chunk with it (``knowledge.reembed``, ``knowledge.embedding``)
in the same transaction. A model deleted or switched off later leaves the setting pointing at nothing
usable, which knowledge reads as no model.

``allowed_internal_hosts`` is read here for the network guard (``core.netguard``), which knows no setting:
every caller of the guard (tools, A2A, MCP, sign-in) passes it the allow-list ``internal_allow_list`` gives.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core import jobs
from agentloft.core.errors import Conflict, Invalid, problem
from agentloft.core.netguard import AllowList
from agentloft.core.runtime import Runtime
from agentloft.core.settings import Settings
from agentloft.llm import service as llm_service
from agentloft.system.models import AppSetting
from agentloft.system.schemas import InstanceSettings, InstanceSettingsUpdate

_DEFAULTS = {"signup_open": "signup_open", "allowed_internal_hosts": "allowed_internal_hosts",
             "generate_titles": "generate_titles"}
EMBEDDING_MODEL = "embedding_model_id"
REEMBED_JOB = "knowledge.reembed"


async def _stored(db: AsyncSession) -> dict[str, Any]:
    rows = (await db.execute(select(AppSetting))).scalars().all()
    return {r.key: r.value for r in rows}


async def get_settings(*, db: AsyncSession, settings: Settings) -> InstanceSettings:
    stored = await _stored(db)
    values = {k: stored.get(k, getattr(settings, env)) for k, env in _DEFAULTS.items()}
    return InstanceSettings(**values, embedding_model_id=stored.get(EMBEDDING_MODEL))


async def embedding_model_id(*, db: AsyncSession) -> int | None:
    """The chosen embedding model's id (it may since have been deleted or switched off), else None."""
    row = await db.get(AppSetting, EMBEDDING_MODEL)
    return row.value if row is not None and isinstance(row.value, int) else None


async def _check_embedding_model(db: AsyncSession, model_id: int | None) -> None:
    await llm_service.check_kind(db=db, model_id=model_id, kind="embedding", field="embeddingModelId",
                                 message="knowledge search needs an embedding model, not a chat model")


def _check_host(entry: str) -> None:
    if "/" in entry:
        try:
            ipaddress.ip_network(entry, strict=False)
        except ValueError as exc:
            raise Invalid(f"not a CIDR: {entry}",
                          fields={"allowedInternalHosts": problem("not_a_cidr", str(exc), entry=entry)}) from exc


async def update_settings(
    *, db: AsyncSession, settings: Settings, data: InstanceSettingsUpdate
) -> InstanceSettings:
    for entry in data.allowed_internal_hosts or []:
        _check_host(entry)
    values = data.model_dump(exclude_none=True)
    if EMBEDDING_MODEL in data.model_fields_set:  # null is a value here: it clears the choice
        await _check_embedding_model(db, data.embedding_model_id)
        values[EMBEDDING_MODEL] = data.embedding_model_id
        if data.embedding_model_id is not None and data.embedding_model_id != await embedding_model_id(db=db):
            await jobs.enqueue(db, REEMBED_JOB, {"modelId": data.embedding_model_id})
    try:  # reading the next key flushes the row added for the one before
        for key, value in values.items():
            row = await db.get(AppSetting, key)
            if row is None:
                db.add(AppSetting(key=key, value=value))
            else:
                row.value = value
        await db.flush()
    except IntegrityError as exc:  # another request stored a setting's first value in between
        raise Conflict("The settings were changed by another request at the same time; reload them and try again",
                       code="settings_changed") from exc
    return await get_settings(db=db, settings=settings)


async def allowed_internal_hosts(*, rt: Runtime) -> list[str]:
    """The admin's ``allowed_internal_hosts`` entries, read in a session of their own (the guard's callers
    are mid-request or in a background run, with or without a session of theirs)."""
    async with rt.db.session() as db:
        instance = await get_settings(db=db, settings=rt.settings)
    return list(instance.allowed_internal_hosts)


async def internal_allow_list(*, rt: Runtime) -> AllowList:
    """The admin's ``allowed_internal_hosts`` setting as the network guard's allow-list (for clients that
    are not tools: MCP, A2A, sign-in; a tool's adds what its caller passed down, ``tools.net``)."""
    return AllowList.parse(await allowed_internal_hosts(rt=rt))
