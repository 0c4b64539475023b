"""Which turns run where: the tasks of this process (so ``stop`` can cancel one and shutdown can interrupt
them all), routing a stop to the worker that owns a run, and finishing the runs of workers that died
(and, through ``on_sweep``, what other domains find they left half done).

A run registers the task it runs in (a background task for the chat endpoints, the caller's own task
for A2A). Cancelling that task makes the engine save what was produced and end the stream; the reason
recorded here decides whether the message is ``stopped`` (the user asked) or ``interrupted`` (shutdown).

Who owns a run is its lease (``chat.leases``). A lease found missing is only believed after a second
look one heartbeat later: a Redis that restarted empty loses every lease at once, and the live owners
put theirs back within a heartbeat.

Stopping the process (``stop_signals``, ``begin_stop``): its running replies get a grace window to finish,
then are interrupted (saved as such, their streams ended, their leases given back). No other worker takes
a reply over: the model's stream belongs to this process and cannot move, and starting the step again
elsewhere would write a different reply over the one the reader saw; the session is free for the next
message at once, on any worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import Any, Literal

from agentloft.chat.leases import Leases, MemoryLeases, NoReply, session_lease
from agentloft.core.errors import Conflict
from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

# How many sessions' owners a process remembers (``RunRegistry.note_owner``): about 1 MB.
OWNERS_KEPT = 10_000

# What to do with runs whose owner died, per kind of lease: called with their ids.
LostHandler = Callable[[list[str]], Awaitable[None]]
# The results of tool calls a run deferred to something outside it, for a session about to resume: called
# with the session id and the calls' ids, it returns the results of those that have one (``on_deferred``).
DeferredResolver = Callable[[str, list[str]], Awaitable[dict[str, Any]]]
# Told of every turn that ended and was saved: the session id, the turn's buffer key and the engine's
# ``TurnResult``.
TurnListener = Callable[[str, str, Any], Awaitable[None]]
# What a resumed turn's tools run with besides its user and session: called with the A2A task id its
# messages carry, it returns the call depth and the tools' extra context the turn first ran with, or None
# (``on_resume_scope``).
ScopeResolver = Callable[[str], Awaitable[tuple[int, dict[str, Any]] | None]]
# Something else each sweep does, with other workers about (``on_sweep``): called with nothing.
SweepTask = Callable[[], Awaitable[None]]

# The signals that ask the server to stop (uvicorn's: SIGTERM from a supervisor, SIGINT from Ctrl+C).
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# How long interrupted runs may take to save and end their streams.
SAVE_WAIT_S = 5.0

# Why a run's task was cancelled (``current_stop_reason``): the user's stop, the server's shutdown, or the
# caller's own cancellation.
StopReason = Literal["stopped", "interrupted", "cancelled"]


@dataclass
class RunRegistry:
    leases: Leases = field(default_factory=MemoryLeases)
    tasks: dict[str, asyncio.Task[object]] = field(default_factory=dict)
    reasons: dict[str, StopReason] = field(default_factory=dict)
    background: set[asyncio.Task[object]] = field(default_factory=set)
    shutting_down: bool = False
    # Session runs leased here but not entered yet (prepared, the background task not started).
    _claimed: dict[str, asyncio.Event] = field(default_factory=dict)
    # Stops that came in while a run was being prepared: session id by its lease's name. Cleared when the
    # run enters (and is cancelled) or its lease is released without it entering (the preparing failed),
    # so a stop never outlives the run it was meant for.
    _early_stops: dict[str, str] = field(default_factory=dict)
    _lost_handlers: dict[str, LostHandler] = field(default_factory=dict)
    _resolvers: list[DeferredResolver] = field(default_factory=list)
    _turn_listeners: list[TurnListener] = field(default_factory=list)
    _scope_resolver: ScopeResolver | None = None
    _sweep_tasks: list[SweepTask] = field(default_factory=list)
    _suspects: dict[str, float] = field(default_factory=dict)
    _sweeper: asyncio.Task[None] | None = None
    _grace: asyncio.Task[None] | None = None  # the grace window of a stop, once one began
    # Whose each session is, as far as this process has seen, least recently used first. A session never
    # changes hands, so this is never stale; it lets a turn check that the caller owns the session before
    # it takes the run's lease without a read every turn (``chat.turns``).
    _owners: OrderedDict[str, int] = field(default_factory=OrderedDict)

    # --- ownership -----------------------------------------------------------------------------------

    async def claim(self, name: str) -> None:
        """Take the run's lease; ``Conflict session_busy`` when a live worker holds it."""
        if not await self.leases.acquire(name):
            raise Conflict("a reply is still being written in this session", code="session_busy")
        self._claimed[name] = asyncio.Event()

    async def release(self, name: str) -> None:
        stopped = self._early_stops.pop(name, None)
        if stopped is not None:
            self.reasons.pop(stopped, None)
        released = self._claimed.pop(name, None)
        if released is not None:
            released.set()
        await self.leases.release(name)

    @contextlib.asynccontextmanager
    async def lease(self, name: str) -> AsyncIterator[None]:
        """Hold ``name`` while the block runs."""
        await self.claim(name)
        try:
            yield
        finally:
            await self.release(name)

    def owner_of(self, session_id: str) -> int | None:
        """The user the session was seen to belong to, None when this process has not seen it."""
        user_id = self._owners.get(session_id)
        if user_id is not None:
            self._owners.move_to_end(session_id)
        return user_id

    def note_owner(self, session_id: str, user_id: int) -> None:
        """Remember whose the session is (the database said so); the least recently used go first."""
        self._owners[session_id] = user_id
        self._owners.move_to_end(session_id)
        if len(self._owners) > OWNERS_KEPT:
            self._owners.popitem(last=False)

    # --- this process's tasks ------------------------------------------------------------------------

    def enter(self, session_id: str) -> None:
        task = asyncio.current_task()
        if task is not None:
            self.tasks[session_id] = task
            if self._early_stops.pop(session_lease(session_id), None):  # a stop came in while it started
                task.cancel()

    def leave(self, session_id: str) -> None:
        self.tasks.pop(session_id, None)
        self.reasons.pop(session_id, None)
        self._early_stops.pop(session_lease(session_id), None)

    def is_running(self, session_id: str) -> bool:
        return session_id in self.tasks

    async def stop(self, session_id: str, wait_s: float = 10.0) -> bool:
        """Cancel the session's run and wait until it saved; False when nothing runs here."""
        task = self.tasks.get(session_id)
        if task is None:
            return await self._stop_starting(session_id, wait_s)
        self.reasons[session_id] = "stopped"
        task.cancel()
        await asyncio.wait([task], timeout=wait_s)
        return True

    async def _stop_starting(self, session_id: str, wait_s: float) -> bool:
        """A run leased here whose task has not started yet: it is cancelled as it enters."""
        released = self._claimed.get(session_lease(session_id))
        if released is None:
            return False
        self.reasons[session_id] = "stopped"
        self._early_stops[session_lease(session_id)] = session_id
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(released.wait(), wait_s)
        return True

    async def stop_anywhere(self, session_id: str, wait_s: float = 10.0) -> bool | None:
        """Stop the session's run on whichever worker runs it. True/False as ``stop`` says; None when no
        live worker holds the run (it ended, or its worker died)."""
        if await self.stop(session_id, wait_s):
            return True
        owner = await self.leases.owner(session_lease(session_id))
        if owner is None or owner == self.leases.worker_id:
            return None
        try:
            reply = await self.leases.request(owner, "stop", {"session": session_id}, limit_s=wait_s + 2)
        except NoReply:
            log.warning("worker %s did not confirm the stop of %s", owner, session_id)
            return False
        return None if reply is None else bool(reply.get("stopped"))

    async def _on_request(self, op: str, payload: dict[str, Any]) -> dict[str, Any]:
        if op == "stop":
            return {"stopped": await self.stop(str(payload["session"]))}
        raise ValueError(f"unknown control request '{op}'")

    def spawn(self, coro: Coroutine[Any, Any, object]) -> asyncio.Task[object]:
        """Start a run in the background, keeping a reference so it is not garbage-collected."""
        task: asyncio.Task[object] = asyncio.create_task(coro)
        self.background.add(task)
        task.add_done_callback(self.background.discard)
        return task

    # --- calls deferred outside a run, and turns that ended -----------------------------------------

    def on_deferred(self, resolver: DeferredResolver) -> None:
        """Register what answers calls a run deferred (the agent-invoke call of a callee that waits for an
        approval: ``a2a.waiting``). The chat domain never learns what such a call is; it only asks."""
        self._resolvers.append(resolver)

    async def resolve_deferred(self, session_id: str, call_ids: list[str]) -> dict[str, Any]:
        """The results the registered resolvers have for ``call_ids`` of the session (those still
        waiting are left out)."""
        found: dict[str, Any] = {}
        for resolver in self._resolvers:
            found.update(await resolver(session_id, [c for c in call_ids if c not in found]))
        return found

    def on_resume_scope(self, resolver: ScopeResolver) -> None:
        """Register what tells a resumed callee's turn the depth and call chain its task was started with
        (``a2a.waiting``), so its own agent-invoke calls are limited as the first run's were."""
        self._scope_resolver = resolver

    async def resume_scope(self, task_id: str | None) -> tuple[int, dict[str, Any]]:
        """The depth and tools' extra context for a resumed turn of ``task_id`` (0 and none: a chat's)."""
        found = await self._scope_resolver(task_id) if task_id and self._scope_resolver else None
        return found or (0, {})

    def on_turn_end(self, listener: TurnListener) -> None:
        """Register what is told of every saved turn (a callee's turn that a caller waits for)."""
        self._turn_listeners.append(listener)

    async def turn_ended(self, session_id: str, key: str, result: object) -> None:
        """Tell the listeners; one that fails is logged, never the run's failure."""
        for listener in self._turn_listeners:
            try:
                await listener(session_id, key, result)
            except Exception:
                log.exception("a listener of the end of the turn of %s failed", session_id)

    # --- runs whose worker died ----------------------------------------------------------------------

    def on_lost(self, kind: str, handler: LostHandler) -> None:
        """Register what finishes the runs of one kind (``session``, ``task``) whose worker died."""
        self._lost_handlers[kind] = handler

    async def lost(self, names: list[str]) -> set[str]:
        """Of ``names`` (runs the database says are running), those no live worker holds. With other
        workers about, a missing lease is looked at again one heartbeat later before it is believed."""
        missing = await self.leases.missing(names)
        if not missing or not self.leases.shared:
            return missing
        await asyncio.sleep(self.leases.ttl_s / 3 + 0.5)
        return await self.leases.missing(sorted(missing))

    async def start(self) -> None:
        """Heartbeats, control requests and, with other workers about, the sweep for their dead runs."""
        await self.leases.start(self._on_request)
        if self.leases.shared:
            self._sweeper = asyncio.create_task(self._sweep_loop())

    def on_sweep(self, task: SweepTask) -> None:
        """Register what else each sweep does (every third of a lease's TTL, only with other workers
        about): work a worker that died may have left half done without holding a lease for it, such as
        the settling of an A2A task whose callee's turn it had saved (``a2a.waiting.catch_up``). One
        process never sweeps: its start-up makes up what its own last run left."""
        self._sweep_tasks.append(task)

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.leases.ttl_s / 3)
            try:
                await self.sweep()
            except self.leases.unreachable as exc:
                log.debug("sweep skipped, the shared store is unreachable: %s", exc)
            except Exception:
                log.exception("sweeping the runs of dead workers failed")
            for task in self._sweep_tasks:  # each on its own: one that fails does not keep the others back
                try:
                    await task()
                except self.leases.unreachable as exc:
                    log.debug("a sweep task skipped, the shared store is unreachable: %s", exc)
                except Exception:
                    log.exception("a task of the sweep failed")

    async def sweep(self) -> None:
        """Finish the runs whose lease has been missing for a heartbeat or more."""
        now = time.monotonic()
        orphans = set(await self.leases.orphans())
        self._suspects = {n: t for n, t in self._suspects.items() if n in orphans}
        confirmed: dict[str, list[str]] = {}
        for name in sorted(orphans):
            first = self._suspects.setdefault(name, now)
            if now - first >= self.leases.ttl_s / 3 and await self.leases.settle(name):
                kind, _, ident = name.partition(":")
                confirmed.setdefault(kind, []).append(ident)
                self._suspects.pop(name, None)
        for kind, ids in confirmed.items():
            handler = self._lost_handlers.get(kind)
            if handler is not None:
                log.warning("a worker died: finishing its %d %s run(s)", len(ids), kind)
                await handler(ids)
            for ident in ids:
                await self.leases.forget(f"{kind}:{ident}")

    # --- stopping the process ------------------------------------------------------------------------

    def begin_stop(self, grace_s: float) -> None:
        """The process was told to stop: its running replies get ``grace_s`` seconds to finish, then are
        interrupted (``interrupt_all``). A second call changes nothing."""
        if self._grace is None and not self.shutting_down:
            self._grace = asyncio.create_task(self._interrupt_after(grace_s))

    async def _interrupt_after(self, grace_s: float) -> None:
        await asyncio.sleep(grace_s)
        if self.tasks:
            log.warning("stopping: interrupting %d running repl%s after the %g s grace window",
                        len(self.tasks), "y" if len(self.tasks) == 1 else "ies", grace_s)
        await self.interrupt_all()

    async def interrupt_all(self, wait_s: float = SAVE_WAIT_S) -> None:
        """Cancel every run of this process, which saves it as interrupted (``current_stop_reason``) and
        ends its stream, and wait up to ``wait_s`` for them to have done so."""
        self.shutting_down = True
        tasks = list(self.tasks.values()) + list(self.background)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=wait_s)

    async def shutdown(self, wait_s: float = SAVE_WAIT_S) -> None:
        if self._grace is not None:
            self._grace.cancel()
        if self._sweeper is not None:
            self._sweeper.cancel()
        await self.interrupt_all(wait_s)
        await self.leases.aclose()


@contextlib.contextmanager
def stop_signals(runs: RunRegistry, grace_s: float) -> Iterator[None]:
    """While the block runs, a stop signal also starts ``runs``' grace window (``begin_stop``), after doing
    what its handler did before (uvicorn's: stop accepting connections, wait for the open responses, and
    only then run the app's shutdown).

    Needed because that shutdown comes too late: an open reply stream is a response uvicorn waits for, so
    the reply ran to its end (or uvicorn, past its own ``timeout_graceful_shutdown``, cut the connection
    without a word). ``agentloft serve`` sets that timeout a little past ``grace_s``, so the interrupted
    streams end properly first.

    Only in the main thread, where Python delivers signals, and only over a handler that is a Python
    callable (uvicorn installs its own with ``signal.signal`` and says so: "this allows to restore previous
    signal handlers later on"); ``tests/core/test_cli_serve.py`` stops a real ``agentloft serve`` with
    SIGTERM, so a uvicorn that changes this fails it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}

    def handler(sig: int, frame: FrameType | None) -> None:
        prior = previous[signal.Signals(sig)]
        if callable(prior):
            prior(sig, frame)
        loop.call_soon_threadsafe(runs.begin_stop, grace_s)

    chained = [sig for sig, prior in previous.items() if callable(prior)]
    for sig in chained:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig in chained:
            signal.signal(sig, previous[sig])


def current_stop_reason(rt: Runtime, session_id: str) -> StopReason:
    """``stopped`` (the user asked), ``interrupted`` (shutdown) or ``cancelled`` (the caller's own task
    was cancelled, e.g. an A2A timeout; saved like a stop, but the cancellation goes on up)."""
    runs = rt.runs
    if runs.shutting_down:
        return "interrupted"
    return runs.reasons.get(session_id, "cancelled")
