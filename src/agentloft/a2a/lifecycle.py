"""A2A start-up and shutdown: the agent-invoke tool type registered; tasks no live worker runs any more
failed (at start-up, and with other workers about, within seconds of their worker dying); the per-agent
handlers closed.

A task's run lives in the worker that started it, under the task's lease (``chat.leases``). A task still
``submitted`` or ``working`` whose lease is gone will never end by itself, so it is failed: in our state,
in the protocol's copy A2A clients read, in the side panel's buffer and in the task's event stream, so
that every follower, on any worker, sees it end. A task ``input_required`` (its callee waits for the
calling user's approval) waits on no worker: ``a2a.waiting`` takes it on from wherever it is answered,
and its ``catch_up`` resumes callers a stopped worker left waiting: at start-up, and with other workers
about on every sweep of the live ones (``RunRegistry.on_sweep``), so no caller waits for a restart.
"""

from __future__ import annotations

import logging
from typing import Any

from a2a.server.cluster import TaskVersion, VersionedEvent
from a2a.types import TaskState, TaskStatus, TaskStatusUpdateEvent
from sqlalchemy import select, update

from agentloft.a2a import tasks, tool, waiting
from agentloft.a2a.models import A2ATaskSession
from agentloft.a2a.server import BufferTaskEventStream
from agentloft.chat.leases import task_lease
from agentloft.chat.lifecycle import end_buffer, sweep_cut_off
from agentloft.core.db import utcnow
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

_GOING = ("submitted", "working")
CUT_OFF_NOTE = "the server running this task stopped before it finished"


async def fail_cut_off(rt: Runtime, task_ids: list[str]) -> list[str]:
    """Fail the tasks (those still going: another worker may have done it already) and end their streams."""
    if not task_ids:
        return []
    ended: list[tuple[str, str, int]] = []  # (task id, context id, new version) of tasks served over A2A
    async with rt.db.session() as db:
        claim = (update(A2ATaskSession)
                 .where(A2ATaskSession.id.in_(task_ids), A2ATaskSession.state.in_(_GOING))
                 .values(state=tasks.FAILED, updated_at=utcnow()).returning(A2ATaskSession.id))
        failed = list((await db.execute(claim)).scalars())
        rows = (await db.execute(select(A2ATaskSession).where(A2ATaskSession.id.in_(failed)))).scalars()
        for row in rows:
            data = row.task_data
            if data:
                status = dict(data.get("status") or {})
                status["state"] = "TASK_STATE_FAILED"
                row.task_data = {**data, "status": status}
                row.task_version += 1
                ended.append((row.id, str(data.get("contextId") or ""), row.task_version))
    for task_id in failed:
        await end_buffer(rt, tasks.buffer_key(task_id), CUT_OFF_NOTE)
    events = BufferTaskEventStream(rt)
    for task_id, context_id, version in ended:
        event = TaskStatusUpdateEvent(task_id=task_id, context_id=context_id,
                                      status=TaskStatus(state=TaskState.TASK_STATE_FAILED))
        await events.publish(task_id, VersionedEvent(event=event, version=TaskVersion(version)))
    return failed


async def _sweep_at_start(rt: Runtime) -> None:
    async def running() -> list[str]:
        async with rt.db.read_session() as db:
            stmt = select(A2ATaskSession.id).where(A2ATaskSession.state.in_(_GOING))
            return list((await db.execute(stmt)).scalars())

    await sweep_cut_off(rt, running=running, lease=task_lease, finish=fail_cut_off, what="A2A tasks")


async def startup(rt: Runtime) -> None:
    rt.registry.register(tool.TOOL_TYPE)  # the add-on call: the tool layer never imports a2a

    async def lost_tasks(task_ids: list[str]) -> None:
        await fail_cut_off(rt, task_ids)

    rt.runs.on_lost("task", lost_tasks)

    async def deferred(session_id: str, call_ids: list[str]) -> dict[str, Any]:
        return await waiting.resolve(rt, session_id, call_ids)

    async def ended(session_id: str, key: str, result: Any) -> None:
        await waiting.turn_ended(rt, session_id, key, result)

    async def scope(task_id: str) -> tuple[int, dict[str, Any]] | None:
        return await waiting.resume_scope(rt, task_id)

    rt.runs.on_deferred(deferred)
    rt.runs.on_resume_scope(scope)
    rt.runs.on_turn_end(ended)
    try:
        await waiting.catch_up(rt)
    except Exception:  # the next start tries again; a start must not fail on it
        log.exception("resuming the callers of callee agents that ended before this start failed")
    if rt.runs.leases.shared:  # a second look one heartbeat later: done in the background
        rt.runs.spawn(_sweep_at_start(rt))

        async def left_waiting() -> None:  # what a worker that died beside this one left half done
            await waiting.sweep(rt)

        rt.runs.on_sweep(left_waiting)
    else:
        await _sweep_at_start(rt)


async def shutdown(rt: Runtime) -> None:
    await rt.a2a.close()
