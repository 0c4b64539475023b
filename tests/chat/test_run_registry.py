"""``RunRegistry`` on its own: a stop that reaches a run while it is still being prepared, when the
preparing then fails (its in-process leases); the sweep for dead workers' runs while the Redis of its
shared leases cannot be reached."""

from __future__ import annotations

import asyncio
import logging

import pytest

from agentloft.chat.leases import session_lease
from agentloft.chat.leases_redis import RedisLeases
from agentloft.chat.runs import RunRegistry
from agentloft.core.redis import connect
from tests.fakes.openai_server import free_port
from tests.support import wait_until


async def _run(runs: RunRegistry, session_id: str) -> str:
    """A run as the engine drives one: registered while it works, gone when it ends."""
    runs.enter(session_id)
    try:
        await asyncio.sleep(0)  # any await: a cancelled run stops here
        return "finished"
    finally:
        runs.leave(session_id)


async def _stop_during_a_failed_prepare_then_run_again() -> tuple[bool, str, dict[str, str]]:
    runs = RunRegistry()
    lease = session_lease("s1")
    await runs.claim(lease)  # preparing the first run
    stopping = asyncio.create_task(runs.stop("s1", wait_s=5))
    await wait_until(lambda: runs.reasons.get("s1") == "stopped")
    await runs.release(lease)  # the preparing failed: the run never entered
    stopped = await stopping
    async with runs.lease(lease):  # the next turn of the session
        outcome = await asyncio.create_task(_run(runs, "s1"))
    return stopped, outcome, dict(runs.reasons)


def test_a_stop_during_a_failed_prepare_does_not_stop_the_next_run() -> None:
    stopped, outcome, reasons = asyncio.run(_stop_during_a_failed_prepare_then_run_again())
    assert stopped is True
    assert outcome == "finished", "the next run was cancelled by a stop meant for the one that failed"
    assert reasons == {}


async def _sweep_while_redis_is_away(caplog: pytest.LogCaptureFixture) -> bool:
    shared = connect(f"redis://127.0.0.1:{free_port()}/0", "sweep-unreachable")  # nothing listens there
    runs = RunRegistry(RedisLeases(shared, ttl_s=0.15))
    await runs.start()
    try:
        await wait_until(lambda: sum("sweep skipped" in r.message for r in caplog.records) >= 2)
        return runs._sweeper is not None and not runs._sweeper.done()
    finally:
        await runs.shutdown()
        await shared.aclose()


def test_the_sweep_skips_its_rounds_quietly_while_redis_is_unreachable(caplog: pytest.LogCaptureFixture) -> None:
    """An outage is expected and passes by itself: each round is skipped with a debug line, not logged as a
    failure, and the sweeper goes on (``Leases.unreachable``)."""
    caplog.set_level(logging.DEBUG, logger="agentloft.chat.runs")
    assert asyncio.run(_sweep_while_redis_is_away(caplog)) is True
    runs_errors = [r for r in caplog.records if r.name == "agentloft.chat.runs" and r.levelno >= logging.WARNING]
    assert runs_errors == []
