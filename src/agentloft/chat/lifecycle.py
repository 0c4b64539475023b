"""Start-up: turns no live worker owns any more are finished as interrupted. Running: with other workers
about, the turns of a worker that died are finished the same way, within seconds. Shutdown: running turns
are cancelled and saved as interrupted, the model clients closed.

"No live worker owns it" is decided by the run's lease (``chat.leases``), never by the database alone: a
worker starting beside others (a rolling deploy starts them one by one) must not finish their live turns.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from agentloft.chat import service, wire
from agentloft.chat.leases import session_lease
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

CUT_OFF_NOTE = "The server stopped while this reply was being written; the text written until then is kept."


async def end_buffer(rt: Runtime, key: str, message: str) -> None:
    """End a run's buffer for its followers: an ``error`` chunk, the stream's end, the end marker."""
    buffers = rt.buffers
    await buffers.append(key, wire.error_frame(message))
    await buffers.append(key, wire.DONE)
    await buffers.close(key, error=message)


async def finish_cut_off(rt: Runtime, session_ids: list[str]) -> list[str]:
    """Mark the sessions' turns interrupted (keeping their checkpointed text) and end their buffers."""
    async with rt.db.session() as db:
        finished = await service.interrupt_runs(db=db, session_ids=session_ids, note=CUT_OFF_NOTE)
    for session_id in finished:
        await end_buffer(rt, session_id, CUT_OFF_NOTE)
    return finished


async def sweep_cut_off(
    rt: Runtime, *, running: Callable[[], Awaitable[list[str]]], lease: Callable[[str], str],
    finish: Callable[[Runtime, list[str]], Awaitable[list[str]]], what: str,
) -> None:
    """At start: finish the runs the database says are going (``running``) that no live worker leases.
    Shared by the chat and A2A domains, whose runs differ only in these four parts."""
    try:
        lost = await rt.runs.lost([lease(i) for i in await running()])
        finished = await finish(rt, sorted(n.partition(":")[2] for n in lost))
    except Exception:  # with other workers about, their sweeps (or the next start) take it from here
        if not rt.runs.leases.shared:
            raise
        log.exception("finishing the %s cut off before this start failed", what)
        return
    if finished:
        log.warning("%d %s were cut off when their server stopped; finished", len(finished), what)


async def _sweep_at_start(rt: Runtime) -> None:
    async def running() -> list[str]:
        async with rt.db.read_session() as db:
            return list(await service.running_session_ids(db=db))

    await sweep_cut_off(rt, running=running, lease=session_lease, finish=finish_cut_off, what="replies")


async def startup(rt: Runtime) -> None:
    runs = rt.runs

    async def lost_sessions(session_ids: list[str]) -> None:
        await finish_cut_off(rt, session_ids)

    runs.on_lost("session", lost_sessions)
    await runs.start()
    if runs.leases.shared:  # a second look one heartbeat later: done in the background
        runs.spawn(_sweep_at_start(rt))
    else:
        await _sweep_at_start(rt)


async def shutdown(rt: Runtime) -> None:
    await rt.runs.shutdown()
    await rt.checkpoints.aclose()
    await rt.models.aclose()


