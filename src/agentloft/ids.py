"""Prefixed ids in the seeds' shape: ``<prefix>_<timestamp base36>_<random>``.

The timestamp part makes ids roughly sortable by creation; the random part (10 chars of base36, ~51 bits)
makes collisions negligible without a database round trip.
"""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"


def _base36(n: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = _ALPHABET[r] + out
    return out or "0"


def new_id(prefix: str) -> str:
    rand = "".join(secrets.choice(_ALPHABET) for _ in range(10))
    return f"{prefix}_{_base36(int(time.time() * 1000))}_{rand}"
