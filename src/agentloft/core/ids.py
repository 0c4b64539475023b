"""Prefixed ids in the seeds' shape: ``<prefix>_<timestamp base36>_<random>``.

The timestamp part makes ids roughly sortable by creation; the random part (10 chars of base36, ~51 bits)
makes collisions negligible without a database round trip.
"""

from __future__ import annotations

import secrets
import time

_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
_RANDOM_SPACE = 36**10


def _base36(n: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = _ALPHABET[r] + out
    return out or "0"


def _random_part() -> str:
    """10 base36 characters, uniform, from one call for randomness (``secrets.choice`` per character
    asked the OS ten times or more: a chat's start makes three ids)."""
    return _base36(secrets.randbelow(_RANDOM_SPACE) + _RANDOM_SPACE)[1:]


def new_id(prefix: str) -> str:
    return f"{prefix}_{_base36(int(time.time() * 1000))}_{_random_part()}"
