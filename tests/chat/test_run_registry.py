"""``RunRegistry`` on its own (its in-process leases): a stop that reaches a run while it is still being
prepared, when the preparing then fails."""

from __future__ import annotations

import asyncio

from agentloft.chat.leases import session_lease
from agentloft.chat.runs import RunRegistry
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
