"""Read and write instance settings. The environment gives defaults; a stored value overrides it."""

from __future__ import annotations

import ipaddress
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.errors import Conflict, Invalid, problem
from agentloft.core.settings import Settings
from agentloft.system.models import AppSetting
from agentloft.system.schemas import InstanceSettings, InstanceSettingsUpdate

_DEFAULTS = {"signup_open": "signup_open", "allowed_internal_hosts": "allowed_internal_hosts",
             "generate_titles": "generate_titles"}


async def _stored(db: AsyncSession) -> dict[str, Any]:
    rows = (await db.execute(select(AppSetting))).scalars().all()
    return {r.key: r.value for r in rows}


async def get_settings(*, db: AsyncSession, settings: Settings) -> InstanceSettings:
    stored = await _stored(db)
    values = {k: stored.get(k, getattr(settings, env)) for k, env in _DEFAULTS.items()}
    return InstanceSettings(**values)


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
    try:  # reading the next key flushes the row added for the one before
        for key, value in data.model_dump(exclude_none=True).items():
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
