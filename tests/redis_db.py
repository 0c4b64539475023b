"""Redis for the test suite: when ``AGENTLOFT_TEST_REDIS_URL`` names a server (e.g. ``redis://127.0.0.1:6379/0``),
the live servers keep their stream buffers, run leases and login counts there, as several workers would.
Each test gets its own key prefix (``AGENTLOFT_REDIS_PREFIX``), so tests never see each other's keys and
the same Redis can serve other work; the keys are deleted when the test ends."""

from __future__ import annotations

import asyncio
import itertools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from redis.asyncio import Redis

ENV = "AGENTLOFT_TEST_REDIS_URL"
_names = itertools.count()
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="redis-test")


def server_url() -> str | None:
    """The test Redis from the environment, or None when the suite runs without one."""
    return os.environ.get(ENV) or None


def new_prefix() -> str:
    return f"agentloft-test-{os.getpid()}-{next(_names)}"


async def _delete(url: str, *, match: str | None = None, names: tuple[str, ...] = ()) -> None:
    """Delete the keys ``names`` and those matching ``match``."""
    client = Redis.from_url(url)
    try:
        keys = [*names, *([key async for key in client.scan_iter(match=match, count=1000)] if match else [])]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


def _run_delete(url: str, **which: Any) -> None:
    """``_delete`` in a fresh event loop on a worker thread (never the caller's loop)."""
    _pool.submit(lambda: asyncio.run(_delete(url, **which))).result()


def delete_prefix(url: str, prefix: str) -> None:
    """Drop every key of one test."""
    _run_delete(url, match=f"{prefix}:*")


def expire_buffer(key: str) -> None:
    """Drop one stream buffer of the running test, as its expiry would (``AGENTLOFT_STREAM_GRACE_SECONDS``
    after the stream's end); nothing to do without a test Redis, where buffers live in the server's memory
    and go with it."""
    url = server_url()
    if url is not None and current is not None:
        _run_delete(url, names=(f"{current}:buf:{key}",))


current: str | None = None
"""The running test's key prefix (set by ``tests/conftest.py`` when a test Redis is configured)."""
