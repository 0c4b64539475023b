"""A tool row's config and secrets: validated against its type, stored split, read back (seed 001).

Its own module because three callers need the same rules and none of them is the others: the admin's
create and edit (``tools.service``) store a config, loading a tool for a turn (``tools.loading``) reads
one back, and neither should reach into the other to do it. A type's ``Config`` is validated whole,
then kept in two columns: plain values in ``config`` (shown to the admin), the type's ``secret_fields``
encrypted in ``secrets_enc`` (never returned by the API, ``SECRET_PLACEHOLDER`` stands for them).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from agentloft.core.crypto import SecretBox
from agentloft.core.errors import invalid_field, invalid_from_pydantic
from agentloft.tools.base import AnyToolType
from agentloft.tools.models import AgentTool
from agentloft.tools.schemas import SECRET_PLACEHOLDER

log = logging.getLogger(__name__)


def _json_key(model: type[BaseModel], name: str) -> str:
    """The JSON (by-alias) key of a Config field given by Python name or alias."""
    for field_name, info in model.model_fields.items():
        key = info.serialization_alias or info.alias or field_name
        if name in (field_name, key):
            return key
    return name


def secret_keys(tool_type: AnyToolType) -> list[str]:
    return [_json_key(tool_type.Config, name) for name in tool_type.secret_fields]


def _encrypt(box: SecretBox, value: Any) -> str:
    return box.encrypt(json.dumps(value))


def _decrypt_all(box: SecretBox, stored: dict[str, str]) -> dict[str, Any]:
    return {key: json.loads(box.decrypt(token)) for key, token in stored.items()}


def decrypt_kept(*, box: SecretBox, row: AgentTool) -> dict[str, Any]:
    """Stored secrets to keep on an edit; ones the current secret key cannot open are dropped (the admin
    has to enter them again) instead of failing the edit."""
    out: dict[str, Any] = {}
    for key, token in (row.secrets_enc or {}).items():
        try:
            out[key] = json.loads(box.decrypt(token))
        except ValueError:
            log.warning("tool %s: stored secret %s cannot be decrypted; dropped on edit", row.slug, key)
    return out


def _merge_secrets(
    keys: Sequence[str], incoming: dict[str, Any], stored: dict[str, Any]
) -> dict[str, Any]:
    """Secret values after an edit: absent, null or the placeholder keep the stored value; an empty
    value ("", {} or []) removes it; anything else replaces it."""
    out: dict[str, Any] = {}
    for key in keys:
        value = incoming.get(key)
        if value is None or value == SECRET_PLACEHOLDER:
            if key in stored:
                out[key] = stored[key]
        elif value not in ("", {}, []):
            out[key] = value
    return out


def _validate_config(tool_type: AnyToolType, data: dict[str, Any]) -> BaseModel:
    try:
        return tool_type.Config.model_validate(data)
    except ValidationError as exc:
        raise invalid_from_pydantic(exc, prefix="config") from exc


def apply_config(
    *, row: AgentTool, tool_type: AnyToolType, box: SecretBox, incoming: dict[str, Any], stored: dict[str, Any]
) -> None:
    """Validate ``incoming`` (plus kept secrets) against the type and store it split in two: plain values
    in ``config``, secret values encrypted in ``secrets_enc``."""
    keys = secret_keys(tool_type)
    secrets = _merge_secrets(keys, incoming, stored)
    plain = {k: v for k, v in incoming.items() if k not in keys}
    parsed = _validate_config(tool_type, {**plain, **secrets})
    dumped = parsed.model_dump(mode="json", by_alias=True)
    row.config = {k: v for k, v in dumped.items() if k not in keys}
    row.secrets_enc = {k: _encrypt(box, dumped[k]) for k in keys if k in secrets and k in dumped}


def check_enableable(*, row: AgentTool, tool_type: AnyToolType, box: SecretBox) -> None:
    """An enabled tool has what its type needs to run (``needed_to_enable``, secret or not, as a webhook's
    URL is); the 422 names the field."""
    if not row.enabled or not tool_type.needed_to_enable:
        return
    try:
        config = parse_stored_config(row=row, tool_type=tool_type, box=box)
    except ValueError:  # a stored config the type no longer reads: its calls say so, not this check
        return
    for name in tool_type.needed_to_enable:
        if not str(getattr(config, name, "") or "").strip():
            key = _json_key(tool_type.Config, name)
            raise invalid_field(f"config.{key}", "required_to_enable", "needed before the tool can be enabled")


def parse_stored_config(*, row: AgentTool, tool_type: AnyToolType, box: SecretBox) -> BaseModel:
    """The row's config as the type's ``Config``, secrets decrypted. Raises ValueError/ValidationError
    when the stored config no longer fits (a type changed, the secret key changed)."""
    return tool_type.Config.model_validate({**row.config, **_decrypt_all(box, row.secrets_enc or {})})
