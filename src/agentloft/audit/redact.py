"""What the trail never keeps: secrets. A value is redacted by the name it is stored under, at any depth,
so a new secret column or config field is covered by being named like one (``*_enc``, ``password*``,
``*token*``, ``*secret*``, ``api_key``, ``authorization``, ``headers``, ``env``). A redacted value that was
set reads ``[redacted]``; an empty one stays as it was, so the trail still shows a secret being set or
cleared."""

from __future__ import annotations

import re
from datetime import date, datetime
from decimal import Decimal
from typing import Any, cast

REDACTED = "[redacted]"
_SECRET_NAME = re.compile(
    r"(password|passwd|secret|token|api_?key|apikey|_enc$|authorization|cookie|credential|private_?key|^headers$|"
    r"^env$)", re.IGNORECASE)


def is_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name)) and not name.endswith(("_names", "Names"))


def plain(value: Any) -> Any:
    """``value`` as JSON can hold it (timestamps as ISO text, anything unknown as its text)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in cast("dict[Any, Any]", value).items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in cast("list[Any]", value)]
    return str(value)


def redact(value: Any) -> Any:
    """``value`` made ``plain`` with every secret-named entry's value replaced by ``REDACTED``."""
    if isinstance(value, dict):
        return {str(k): (REDACTED if v not in (None, "", {}, []) else plain(v)) if is_secret(str(k)) else redact(v)
                for k, v in cast("dict[Any, Any]", value).items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in cast("list[Any]", value)]
    return plain(value)
