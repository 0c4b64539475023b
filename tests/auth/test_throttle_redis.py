"""The sign-in counters in Redis (``AGENTLOFT_TEST_REDIS_URL``), as several workers share them: a window
starts at its first hit and is never extended, hits from two workers at once get distinct counts, and a
window's end drops the counter. The rules over them are the same code as in memory (``test_throttle``);
over real HTTP on Redis they run in the PostgreSQL + Redis pass (``test_login_throttle``, tests/scale)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from agentloft.auth.throttle_redis import RedisCounters
from agentloft.core.redis import SharedRedis, connect
from tests import redis_db


@pytest.fixture
async def workers() -> AsyncIterator[tuple[RedisCounters, RedisCounters]]:
    url = redis_db.server_url()
    if not url:
        pytest.skip(f"needs {redis_db.ENV}")
    prefix = redis_db.new_prefix()
    shared: list[SharedRedis] = [connect(url, prefix), connect(url, prefix)]
    yield RedisCounters(shared[0]), RedisCounters(shared[1])
    for one in shared:
        await one.aclose()
    redis_db.delete_prefix(url, prefix)


async def test_a_window_starts_at_its_first_hit_and_is_never_extended(
    workers: tuple[RedisCounters, RedisCounters],
) -> None:
    a, b = workers
    first = await a.hit("k", 60)
    assert first.value == 1 and 59 < first.resets_in <= 60
    second = await b.hit("k", 60)  # another worker, the same counter
    assert second.value == 2 and second.resets_in <= first.resets_in
    await b.clear("k", "missing")
    assert (await a.hit("k", 60)).value == 1


async def test_give_back_lowers_a_live_count_and_never_makes_one(
    workers: tuple[RedisCounters, RedisCounters],
) -> None:
    a, b = workers
    await a.hit("k", 60)
    await a.hit("k", 60)
    await b.give_back("k", "missing")
    again = await a.hit("k", 60)
    assert again.value == 2 and again.resets_in < 60  # the same window, one less
    await b.give_back("k", "k", "k", "k")
    assert (await a.hit("k", 60)).value == 1  # never below zero
    first = await a.hit("missing", 60)
    assert first.value == 1 and first.resets_in > 59  # a key given back before it existed: a fresh one


async def test_hits_from_two_workers_at_once_get_distinct_counts(
    workers: tuple[RedisCounters, RedisCounters],
) -> None:
    a, b = workers
    counts = await asyncio.gather(*(c.hit("burst", 60) for _ in range(25) for c in (a, b)))
    assert sorted(c.value for c in counts) == list(range(1, 51))


async def test_the_counter_starts_over_when_its_window_ends(workers: tuple[RedisCounters, RedisCounters]) -> None:
    a, _ = workers
    assert (await a.hit("short", 0.2)).value == 1
    assert (await a.hit("short", 0.2)).value == 2
    deadline = asyncio.get_running_loop().time() + 5
    while (count := await a.hit("short", 0.2)).value != 1:
        assert asyncio.get_running_loop().time() < deadline, "the window never ended"
        await asyncio.sleep(0.05)
    assert count.resets_in <= 0.2
