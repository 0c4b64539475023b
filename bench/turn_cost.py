"""What a chat turn costs the server: CPU per turn and per chunk, concurrency against the floor, first
text, and resident memory after a burst.

Three processes: the fake OpenAI-compatible model (``bench.stream_relay --serve-fake``, as fast as it
can), agentloft (first-run defaults on, so the Assistant has its default tools; its CPU and memory are
read from ``/proc``), and this client, which reads responses as bytes (``bench.byte_client``) so it takes
little CPU from the server on a small machine. The baseline of every wall-time figure is the fake model's
stream read directly by the same client in the same run (the floor).

- ``cpu``: sequential chats of 10 and of 2,000 chunks for each of {no tools, the Assistant's tools} x
  {cookie, API token}, in blocks that alternate between the variants over ``--rounds`` rounds. The
  server's CPU seconds per chat (all its threads, from ``/proc/<pid>/task/*/schedstat``) are fitted to
  ``turn + chunks x chunk``. ``--turn-kind follow-up`` measures second turns of sessions whose first
  turn ran before the measurement (what a continuing conversation costs); ``new`` starts a new chat
  each time (what a first turn costs, with whatever runs once per chat).
- ``first``: time to the first text of a 2,000-chunk reply with the Assistant's tools, interleaved with
  the floor's (medians).
- ``concurrent``: ``--concurrent`` chats of ``--concurrent-chunks`` chunks at once, floor then the agent
  without tools then the Assistant, in ``--rounds`` rounds (wall time; medians of the rounds' ratios).
- ``usage``: what usage recording and a budget check add to a follow-up turn (the agent without tools,
  10 chunks): CPU per turn, interleaved turn by turn in a rotating order over ``--rounds`` rounds of
  ``--turns`` turns of each variant, switched in the server without a write: the code with both off
  (``/_bench/usage/off``: the baseline, as before usage was recorded), recording alone, recording with
  an everyone budget that every turn checks, and the same with the check's sum on the connection's
  thread (as before 2026-12-07 23:00). A variant's figure against the baseline is the median of its
  rounds' differences from the same round's baseline; statements and transactions per turn are counted
  in a block of each variant afterwards.
- ``observe``: what metrics and traces add to a turn's CPU. Four more servers, each on SQLite in its own
  data dir: one with neither, one with ``AGENTLOFT_METRICS=true``, two with ``OTEL_EXPORTER_OTLP_ENDPOINT``
  pointing at a local OTLP/HTTP sink (``--serve-otlp``, a process of its own that reads and drops what it
  gets), one sampling every trace, one one in ten (``OTEL_TRACES_SAMPLER=parentbased_traceidratio``,
  ``OTEL_TRACES_SAMPLER_ARG=0.1``), batch export as configured by default except a 200 ms schedule, and each
  block ends with a flush (``/_bench/traces/flush``), so serialising and sending the spans is counted in
  the block that made them. Follow-up turns of the agent without tools and of the Assistant (10 and 500
  chunks) in blocks that alternate between the four servers over ``--rounds`` rounds (medians); ratios
  against the server with neither. No scrape of ``/metrics`` runs meanwhile (a scrape's cost is the
  scraper's rhythm, not the turn's). ``--observe-before SRC`` adds a fifth server, every trace sampled,
  whose ``agentloft`` is imported from the source tree SRC (say ``/work/main/src``: before a change).
- ``memory``: resident memory idle, at the peak of ``--burst`` concurrent chats, and every 10 s for a
  minute after the burst.

    python -m bench.turn_cost [--scenarios cpu,first,concurrent,memory,usage,observe] [--rounds 3] [--turns 30]
                              [--turn-kind follow-up|new] [--postgres postgresql://user:pw@host/postgres]
                              [--profile FILE] [--src DIR]

``--src DIR``: the ``agentloft`` package the server imports (default: this checkout's ``src``, not the
installed package, which may be another checkout's). ``--postgres`` runs the server on a new database on
that server (dropped afterwards) instead of SQLite.
``--profile FILE`` records cProfile over the ``cpu`` scenario's measured chats into FILE (for ``pstats``),
and over the ``usage`` scenario's into ``FILE.off``, ``FILE.record``, ``FILE.budget`` and ``FILE.thread``;
the CPU figures of such a run include the profiler's own cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.byte_client import ByteClient, Reply
from bench.common import ROOT, admin_with_fake_model, spawn, wait_up

TEXT_MARK = b'"text-delta"'
FLOOR_MARK = b'"content": "tok'
ERROR_MARK = b'"type":"error"'
AGENTS = {"bench": "no tools", "assistant": "the Assistant's tools"}


# --- the server process ----------------------------------------------------------------------------


def serve(port: int, data_dir: str, database_url: str) -> None:
    """agentloft with first-run defaults, plus ``/_bench/`` routes for the profiler and memory figures."""
    import uvicorn

    from agentloft.app import create_app
    from agentloft.core.settings import load_settings

    overrides: dict[str, Any] = {"data_dir": Path(data_dir), "env": "test", "secret_key": "bench-secret",
                                 "max_running_chats_per_user": 0}  # one bench user runs many chats at once
    if database_url:
        overrides["database_url"] = database_url
    settings = load_settings(**overrides)
    # Measured as the server runs from its second start on: the first start on an empty database also
    # imports the migration tool, ~9 MB that stays resident (``core.migrate``); an operator's deploy step
    # (``agentloft db upgrade``) does the same in a process of its own.
    upgrade = "import sys; from agentloft.core import migrate; migrate.upgrade(sys.argv[1])"
    subprocess.run([sys.executable, "-c", upgrade, settings.resolved_database_url], check=True)
    app = create_app(settings)
    control = _Control(app)

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/_bench/"):
            body = json.dumps(control.handle(scope["path"][8:], scope.get("query_string", b"").decode()))
            await send({"type": "http.response.start", "status": 200,
                        "headers": [(b"content-type", b"application/json")]})
            await send({"type": "http.response.body", "body": body.encode()})
            return
        await app(scope, receive, send)

    uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning", access_log=False)


class _Control:
    """``/_bench/profile/start``, ``/_bench/profile/stop?FILE`` (and named profilers that add up over
    several spans: ``profile/resume?NAME``, ``profile/pause?NAME``, ``profile/dump?NAME=FILE``),
    ``/_bench/memory`` and ``/_bench/arenas``
    (what the memory scenario prints), and diagnostics for finding what a process keeps:
    ``/_bench/collect``, ``/_bench/trim``, ``/_bench/releases`` (the app's own collect-and-trim count),
    ``/_bench/types?N`` (tracked objects by type), ``/_bench/holders?TYPE`` (a referrer chain),
    ``/_bench/tasks`` (where the loop's tasks wait)."""

    def __init__(self, app: Any) -> None:
        import cProfile

        self.app = app
        self.profiler = cProfile.Profile(time.thread_time)  # CPU of the event loop's thread, not wall time
        self.profilers: dict[str, cProfile.Profile] = {}  # the usage scenario's, one per variant
        self.usage_off: dict[str, Any] = {}
        self.statements = _Statements()

    def handle(self, path: str, query: str) -> dict[str, Any]:
        if path == "profile/start":
            self.profiler.enable()
        elif path == "profile/stop":
            self.profiler.disable()
            self.profiler.dump_stats(query)
        elif path == "profile/resume":  # ``?NAME``: the named profiler on, over what it recorded so far
            import cProfile

            self.profilers.setdefault(query, cProfile.Profile(time.thread_time)).enable()
        elif path == "profile/pause":
            self.profilers[query].disable()
        elif path == "profile/dump":  # ``?NAME=FILE``
            name, _, file = query.partition("=")
            self.profilers.pop(name).dump_stats(file)
        elif path == "memory":
            return _memory_figures()
        elif path == "collect":  # a diagnostic: what a full collection frees
            import gc

            return {"collected": gc.collect()}
        elif path == "trim":  # a diagnostic: what giving glibc's free heap back would free
            import ctypes

            return {"trimmed": ctypes.CDLL("libc.so.6").malloc_trim(0)}
        elif path == "arenas":
            return _arenas()
        elif path == "tasks":  # a diagnostic: where the event loop's tasks wait
            import collections

            where = collections.Counter(
                " <- ".join(f"{f.f_code.co_name}:{f.f_lineno}" for f in task.get_stack(limit=6))
                for task in asyncio.all_tasks())
            return dict(where.most_common(20))
        elif path == "traces/flush":  # the observe scenario: the batch processor's spans exported now
            provider = self.app.state.runtime.tracing.provider
            return {"flushed": bool(provider.force_flush()) if provider is not None else False}
        elif path.startswith("usage/"):
            return _usage_switch(path.removeprefix("usage/"), self.usage_off)
        elif path.startswith("statements/"):
            return self.statements.handle(path.removeprefix("statements/"), self.app.state.db.engine)
        elif path == "releases":
            return {"releases": self.app.state.memory.releases}
        elif path == "holders":  # a diagnostic: what keeps the first object of a type alive
            return {"chain": _holders(query)}
        elif path == "types":  # a diagnostic: how many objects of each type the collector tracks
            import collections
            import gc

            counts = collections.Counter(type(o).__qualname__ for o in gc.get_objects())
            return dict(counts.most_common(int(query or 40)))
        return {}


def _usage_switch(op: str, saved: dict[str, Any]) -> dict[str, Any]:
    """The ``usage`` scenario's variants, switched in the server without a write (so without dropping the
    read cache or adding an audit row between blocks) while one everyone budget exists throughout:
    ``usage/off``: turns run as before usage was recorded — no record added to the save, no budget read
    before the turn (so no model wrapper either); ``usage/record``: recorded, and the turn's user is one no
    budget applies to (``budgets.applying`` runs and finds none, as for such a user); ``usage/on``: the
    code as it is; ``usage/thread``: as ``on`` with the budget's sum run as it was until 2026-12-07, on
    SQLite on the connection's thread rather than the event loop. The baseline is thus in the same process
    and run as what it is compared with."""
    from agentloft.chat import engine
    from agentloft.usage import budgets

    async def nothing(*_: Any, **__: Any) -> None:
        return None

    async def none_apply(rt: Any, db: Any, *, user_id: int) -> list[Any]:
        await saved["applying"](rt, db, user_id=user_id)
        return []

    async def used_on_the_thread(db: Any, *, user_id: int, today: Any, since: Any) -> dict[str, tuple[int, float]]:
        connection = await db.connection()
        row = (await connection.execute(budgets._USED, {"user_id": user_id, "today": today, "since": since})).one()
        return {"month": (int(row[0]), float(row[1])), "day": (int(row[2]), float(row[3]))}

    if not saved:
        saved.update(record=engine._record_usage, refuse=budgets.refuse_over, applying=budgets.applying,
                     used=budgets._used)
    engine._record_usage, budgets.refuse_over, budgets.applying = saved["record"], saved["refuse"], saved["applying"]
    budgets._used = saved["used"]
    if op == "thread":
        budgets._used = used_on_the_thread
    elif op == "off":
        engine._record_usage = nothing
        budgets.refuse_over = nothing
    elif op == "record":
        budgets.applying = none_apply
    return {"variant": op}


class _Statements:
    """``statements/start`` and ``statements/stop``: the statements and transactions (BEGINs) the app's
    engine ran in between, as ``tests/chat/test_turn_statements.py`` counts them."""

    def __init__(self) -> None:
        self.counts = {"statements": 0, "transactions": 0}

    def _statement(self, *_: Any) -> None:
        self.counts["statements"] += 1

    def _begin(self, conn: Any) -> None:
        if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            self.counts["transactions"] += 1

    def handle(self, op: str, engine: Any) -> dict[str, Any]:
        from sqlalchemy import event

        sync = engine.sync_engine
        if op == "start":
            self.counts = {"statements": 0, "transactions": 0}
            event.listen(sync, "before_cursor_execute", self._statement)
            event.listen(sync, "begin", self._begin)
        elif op == "stop":
            event.remove(sync, "before_cursor_execute", self._statement)
            event.remove(sync, "begin", self._begin)
        return dict(self.counts)


def _holders(type_name: str, depth: int = 14) -> list[str]:
    """One chain of referrers from an object of ``type_name`` up to a module, a frame or a root, breadth
    first (each step names the referrer's type and, for a dict, the key that holds the object)."""
    import gc
    import inspect

    start = next((o for o in gc.get_objects() if type(o).__qualname__ == type_name), None)
    if start is None:
        return []
    paths: dict[int, list[str]] = {id(start): [f"{type_name} {str(start)[:120]}"]}
    frontier = [start]
    mine = {id(paths), id(frontier)}
    for _ in range(depth):
        found: list[Any] = []
        mine.add(id(found))
        for obj in frontier:
            for ref in gc.get_referrers(obj):
                if id(ref) in paths or id(ref) in mine or (inspect.isframe(ref) and ref.f_code.co_name == "_holders"):
                    continue
                label = type(ref).__qualname__
                if isinstance(ref, dict):
                    label += "[" + ",".join(str(k)[:30] for k, v in ref.items() if v is obj)[:60] + "]"
                elif inspect.isfunction(ref) or inspect.iscoroutine(ref) or inspect.isframe(ref):
                    label += " " + getattr(ref, "__qualname__", "") + getattr(getattr(ref, "f_code", None),
                                                                          "co_name", "")
                paths[id(ref)] = [*paths[id(obj)], label]
                if inspect.ismodule(ref) or inspect.isframe(ref):
                    return paths[id(ref)]
                found.append(ref)
        frontier = found[:500]
        mine.add(id(frontier))
    return paths[id(frontier[0])] if frontier else []


def _arenas() -> dict[str, Any]:
    """pymalloc's arenas (1 MiB each on 3.11, mmapped, so not in ``mallinfo2``), from ``sys._debugmallocstats``."""
    import re
    import sys
    import tempfile

    with tempfile.TemporaryFile("w+") as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read()
    figures = {}
    for key in ("arenas allocated current", "arenas highwater mark", "bytes in allocated blocks",
                "bytes in available blocks"):
        found = re.search(re.escape(key) + r"\s*=\s*([\d,]+)", text)
        if found:
            figures[key] = int(found.group(1).replace(",", ""))
    return figures


def _memory_figures() -> dict[str, Any]:
    """Python objects the collector tracks, and glibc's heap: bytes in use, free inside the heap, and in
    mmapped blocks (``mallinfo2``)."""
    import ctypes
    import gc

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
            "keepcost")]

    figures: dict[str, Any] = {"gc_objects": len(gc.get_objects())}
    try:
        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = MallInfo2
        info = libc.mallinfo2()
        mb = 1024 * 1024
        figures.update(heap_mb=round(info.arena / mb, 1), in_use_mb=round(info.uordblks / mb, 1),
                       free_mb=round(info.fordblks / mb, 1), mmap_mb=round(info.hblkhd / mb, 1))
    except (OSError, AttributeError):
        pass
    return figures


# --- reading the server from outside ---------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """CPU time of every live thread of ``pid`` (nanosecond counters, unlike ``/proc/<pid>/stat``)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            total += int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
    return total / 1e9


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def settle(pid: int, limit_s: float = 10.0) -> None:
    """Wait until the server spends (almost) no CPU: work that follows a reply (saving, closing) is
    counted with the chats that caused it, not with the next block."""
    deadline = time.monotonic() + limit_s
    last = cpu_seconds(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(0.05)
        now = cpu_seconds(pid)
        if now - last < 0.0005:
            return
        last = now


# --- requests --------------------------------------------------------------------------------------


@dataclass
class Target:
    app: ByteClient
    fake: ByteClient
    pid: int
    auth: dict[str, dict[str, str]] = field(default_factory=dict)  # cookie / token → request headers


async def chat(t: Target, slug: str, chunks: int, auth: str, session_id: str | None = None) -> Reply:
    body = json.dumps({"message": f"go {chunks}", "sessionId": session_id}).encode()
    return await t.app.post(f"/api/agents/{slug}/chat", body, t.auth[auth], TEXT_MARK, ERROR_MARK)


async def floor(t: Target, chunks: int) -> Reply:
    body = json.dumps({"model": "fake", "stream": True,
                       "messages": [{"role": "user", "content": f"go {chunks}"}]}).encode()
    return await t.fake.post("/v1/chat/completions", body, {}, FLOOR_MARK)


async def _setup(app_url: str, fake_url: str) -> dict[str, dict[str, str]]:
    """Sign up the admin, point the default model at the fake, add an agent without tools, make a token.
    The Assistant (first-run defaults) uses the default model."""
    async with httpx.AsyncClient(base_url=app_url, timeout=60) as client:
        csrf, model_id = await admin_with_fake_model(client, fake_url)
        r = await client.post("/api/admin/agents", headers=csrf, json={
            "slug": "bench", "name": "Bench", "modelId": model_id, "maxOutputTokens": 100_000})
        r.raise_for_status()
        token = (await client.post("/api/auth/tokens", headers=csrf, json={"name": "bench"})).json()["token"]
        cookies = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    return {"cookie": {"Cookie": cookies, **csrf}, "token": {"Authorization": f"Bearer {token}"}}


# --- scenarios ---------------------------------------------------------------------------------------


async def _block(t: Target, slug: str, auth: str, chunks: int, turns: int, kind: str) -> float:
    """Server CPU seconds per chat over ``turns`` sequential chats."""
    sessions: list[str | None] = [None] * turns
    if kind == "follow-up":
        sessions = [(await chat(t, slug, 10, auth)).headers["x-session-id"] for _ in range(turns)]
    await settle(t.pid)
    before = cpu_seconds(t.pid)
    for session_id in sessions:
        await chat(t, slug, chunks, auth, session_id)
    await settle(t.pid)
    return (cpu_seconds(t.pid) - before) / turns


async def scenario_cpu(t: Target, args: argparse.Namespace, app_url: str) -> dict[str, dict[str, float]]:
    variants = [(slug, auth) for slug in AGENTS for auth in ("cookie", "token")]
    sizes = (10, 2000)
    for slug, auth in variants:  # warm every path
        for chunks in sizes:
            await chat(t, slug, chunks, auth)
    samples: dict[tuple[str, str, int], list[float]] = {(s, a, n): [] for s, a in variants for n in sizes}
    if args.profile:
        await _get(app_url, "/_bench/profile/start")
    for _ in range(args.rounds):
        for slug, auth in variants:
            for chunks in sizes:
                turns = args.turns if chunks == 10 else max(3, args.turns // 3)
                samples[slug, auth, chunks].append(await _block(t, slug, auth, chunks, turns, args.turn_kind))
    if args.profile:
        await _get(app_url, f"/_bench/profile/stop?{Path.cwd() / args.profile}")
    out = {}
    for slug, auth in variants:
        small = statistics.median(samples[slug, auth, 10])
        large = statistics.median(samples[slug, auth, 2000])
        per_chunk = (large - small) / (2000 - 10)
        out[f"{slug}/{auth}"] = {"turn_ms": (small - 10 * per_chunk) * 1000, "chunk_us": per_chunk * 1e6,
                                 "chat10_ms": small * 1000, "chat2000_ms": large * 1000}
    return out


async def scenario_first(t: Target, args: argparse.Namespace) -> dict[str, float]:
    for _ in range(3):
        await floor(t, 2000)
        await chat(t, "assistant", 2000, "cookie")
    base, relay = [], []
    for _ in range(args.first_runs):
        base.append((await floor(t, 2000)).first)
        relay.append((await chat(t, "assistant", 2000, "cookie")).first)
    return {"floor_ms": statistics.median(base) * 1000, "chat_ms": statistics.median(relay) * 1000}


async def _wall(n: int, make: Callable[[], Awaitable[Reply]]) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(make() for _ in range(n)))
    return time.perf_counter() - started


async def scenario_concurrent(t: Target, args: argparse.Namespace) -> dict[str, Any]:
    n, chunks = args.concurrent, args.concurrent_chunks
    rounds: list[dict[str, float]] = []
    await _wall(n, lambda: chat(t, "bench", chunks, "cookie"))  # warm: open the connections
    for _ in range(args.rounds):
        row = {"floor": await _wall(n, lambda: floor(t, chunks))}
        for slug in AGENTS:
            await settle(t.pid)
            row[slug] = await _wall(n, lambda slug=slug: chat(t, slug, chunks, "cookie"))  # type: ignore[misc]
        rounds.append(row)
    return {
        "floor_s": statistics.median(r["floor"] for r in rounds),
        **{f"{slug}_s": statistics.median(r[slug] for r in rounds) for slug in AGENTS},
        **{f"{slug}_ratio": statistics.median(r[slug] / r["floor"] for r in rounds) for slug in AGENTS},
        "ratios": {slug: [round(r[slug] / r["floor"], 2) for r in rounds] for slug in AGENTS},
    }


async def scenario_memory(t: Target, args: argparse.Namespace, app_url: str) -> dict[str, Any]:
    idle = rss_mb(t.pid)
    peak = idle
    stop = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss_mb(t.pid))
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    await _wall(args.burst, lambda: chat(t, "bench", args.concurrent_chunks, "cookie"))
    stop.set()
    await sampler
    ended = time.monotonic()
    after: list[tuple[int, float]] = []
    for second in range(10, 70, 10):
        await asyncio.sleep(max(0.0, ended + second - time.monotonic()))
        after.append((second, rss_mb(t.pid)))
    server = {**await _get(app_url, "/_bench/memory"), **await _get(app_url, "/_bench/arenas")}
    if args.trim:
        server["collect"] = await _get(app_url, "/_bench/collect")
        server["trim"] = await _get(app_url, "/_bench/trim")
        server["rss_after_trim_mb"] = rss_mb(t.pid)
        server.update(await _get(app_url, "/_bench/arenas"))
    return {"idle_mb": idle, "peak_mb": peak, "after": after, "server": server}


USAGE_VARIANTS = {"off": "before usage (baseline)", "record": "usage recorded", "budget": "recorded + budget check",
                  "thread": "… its sum on the thread"}


@dataclass(frozen=True, slots=True)
class UsageSample:
    """One block of the ``usage`` scenario: per follow-up turn, server CPU seconds, statements and
    transactions."""

    cpu_s: float
    statements: float
    transactions: float


async def _usage_block(t: Target, app_url: str, sessions: list[str]) -> UsageSample:
    """Follow-up turns of the agent without tools (cookie, 10 chunks) on ``sessions`` (each had its first
    turn before), with the statements and transactions they ran."""
    await settle(t.pid)
    await _get(app_url, "/_bench/statements/start")
    before = cpu_seconds(t.pid)
    for session_id in sessions:
        await chat(t, "bench", 10, "cookie", session_id)
    await settle(t.pid)
    spent = cpu_seconds(t.pid) - before
    counts = await _get(app_url, "/_bench/statements/stop")
    turns = len(sessions)
    return UsageSample(spent / turns, counts["statements"] / turns, counts["transactions"] / turns)


async def _budget(app_url: str, auth: dict[str, str], on: bool) -> None:
    """An everyone budget no turn reaches (every turn of the ``on`` variant checks it and runs on the
    budgeted model), or none."""
    async with httpx.AsyncClient(base_url=app_url, timeout=60, headers=auth) as client:
        for b in (await client.get("/api/admin/budgets")).json()["items"]:
            (await client.delete(f"/api/admin/budgets/{b['id']}")).raise_for_status()
        if on:
            (await client.post("/api/admin/budgets", json={"scope": "everyone", "period": "month",
                                                            "maxTokens": 10**12})).raise_for_status()


async def _new_sessions(t: Target, n: int) -> list[str]:
    return [(await chat(t, "bench", 10, "cookie")).headers["x-session-id"] for _ in range(n)]


async def _usage_turn(t: Target, variant: str, session_id: str) -> float:
    """Server CPU seconds of one follow-up turn in ``variant``, the server settled before and after (so
    what follows a reply, its connection's close and the run's end, counts with it, not with the next)."""
    await t.app.post(f"/_bench/usage/{USAGE_SWITCH[variant]}", b"", {})
    await settle(t.pid)
    before = cpu_seconds(t.pid)
    await chat(t, "bench", 10, "cookie", session_id)
    await settle(t.pid)
    return cpu_seconds(t.pid) - before


USAGE_SWITCH = {"off": "off", "record": "record", "budget": "on", "thread": "thread"}


async def scenario_usage(t: Target, args: argparse.Namespace, app_url: str) -> dict[str, Any]:
    """What usage recording and the budget check add to a turn. ``--rounds`` rounds of ``--turns`` turns
    of each variant (``USAGE_VARIANTS``), interleaved turn by turn in an order rotated at every step, so
    that whatever drifts (the machine's other load, the database's size) moves the variants alike, and no
    variant always follows the same one. Every session's first turn runs before any measurement, and the
    variants switch in the server without a write (``_usage_switch``). A variant's figure against the
    baseline is the median over the rounds of its mean turn's difference from the same round's baseline
    (paired), beside the plain medians. Statements and transactions per turn are counted in a block of
    each variant after that. ``--profile FILE``: cProfile of each variant's measured turns in
    ``FILE.VARIANT``."""
    names = list(USAGE_VARIANTS)
    await _budget(app_url, t.auth["cookie"], True)
    for variant in names:  # warm every path
        await _get(app_url, f"/_bench/usage/{USAGE_SWITCH[variant]}")
        await _usage_block(t, app_url, await _new_sessions(t, 5))
    await _get(app_url, "/_bench/usage/on")
    fresh = await _new_sessions(t, args.rounds * len(names) * args.turns + len(names) * 10)
    samples: dict[str, list[float]] = {v: [] for v in names}
    for i in range(args.rounds):
        spent = dict.fromkeys(names, 0.0)
        await _get(app_url, "/_bench/collect")  # each round starts from the collector's counts at zero
        for j in range(args.turns):
            k = (i * args.turns + j) % len(names)
            for variant in names[k:] + names[:k]:
                if args.profile:
                    await t.app.post(f"/_bench/profile/resume?{variant}", b"", {})
                spent[variant] += await _usage_turn(t, variant, fresh.pop())
                if args.profile:
                    await t.app.post(f"/_bench/profile/pause?{variant}", b"", {})
        for variant in names:
            samples[variant].append(spent[variant] / args.turns)
    counts: dict[str, UsageSample] = {}
    for variant in names:
        await _get(app_url, f"/_bench/usage/{USAGE_SWITCH[variant]}")
        counts[variant] = await _usage_block(t, app_url, [fresh.pop() for _ in range(10)])
    await _get(app_url, "/_bench/usage/on")
    await _budget(app_url, t.auth["cookie"], False)
    if args.profile:
        for variant in names:
            await _get(app_url, f"/_bench/profile/dump?{variant}={Path.cwd() / args.profile}.{variant}")
    base = samples["off"]
    return {v: {"turn_ms": statistics.median(xs) * 1000,
                "diff_ms": statistics.median(x - b for x, b in zip(xs, base, strict=True)) * 1000,
                "diffs_ms": [round((x - b) * 1000, 2) for x, b in zip(xs, base, strict=True)],
                "statements": counts[v].statements, "transactions": counts[v].transactions}
            for v, xs in samples.items()}


OBSERVE_VARIANTS = {"off": "neither (baseline)", "metrics": "AGENTLOFT_METRICS=true",
                    "tracing": "OTLP traces, all sampled", "sampled": "OTLP traces, 1 in 10 sampled",
                    "before": "all sampled, --observe-before"}
OBSERVE_SIZES = (10, 500)


def serve_otlp(port: int) -> None:
    """The OTLP/HTTP sink of the ``observe`` scenario: reads each export and answers an empty success."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Sink(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Sink).serve_forever()


def _data_dir(parent: str, name: str) -> str:
    path = Path(parent, name)
    path.mkdir()
    return str(path)


async def _observe_block(t: Target, url: str, slug: str, chunks: int, turns: int) -> float:
    """Server CPU seconds per follow-up turn over ``turns`` turns, the spans they made exported."""
    sessions = [(await chat(t, slug, 10, "cookie")).headers["x-session-id"] for _ in range(turns)]
    await _get(url, "/_bench/traces/flush")
    await settle(t.pid)
    before = cpu_seconds(t.pid)
    for session_id in sessions:
        await chat(t, slug, chunks, "cookie", session_id)
    await _get(url, "/_bench/traces/flush")
    await settle(t.pid)
    return (cpu_seconds(t.pid) - before) / turns


async def scenario_observe(args: argparse.Namespace, fake_url: str, fake: ByteClient,
                           procs: list[subprocess.Popen[bytes]], data: str) -> dict[str, dict[str, float]]:
    """Four servers (``OBSERVE_VARIANTS``) started here, measured in alternating blocks."""
    sink = free_port()
    procs.append(spawn("bench.turn_cost", "--serve-otlp", str(sink)))
    traces = {"OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{sink}", "OTEL_BSP_SCHEDULE_DELAY": "200"}
    envs: dict[str, dict[str, str]] = {
        "off": {}, "metrics": {"AGENTLOFT_METRICS": "true"}, "tracing": traces,
        "sampled": {**traces, "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.1"}}
    if args.observe_before:  # a fifth server: all sampled, its agentloft from another tree (before a change)
        envs["before"] = traces
    targets: dict[str, tuple[Target, str]] = {}
    for variant, env in envs.items():
        port = free_port()
        src = args.observe_before if variant == "before" else args.src
        proc = spawn("bench.turn_cost", "--serve", str(port), _data_dir(data, variant), "", env=env, src=src)
        procs.append(proc)
        url = f"http://127.0.0.1:{port}"
        await wait_up(f"{url}/api/health")
        t = Target(ByteClient("127.0.0.1", port), fake, proc.pid)
        t.auth = await _setup(url, fake_url)
        targets[variant] = (t, url)
    samples: dict[tuple[str, str, int], list[float]] = {
        (v, slug, n): [] for v in envs for slug in AGENTS for n in OBSERVE_SIZES}
    for t, url in targets.values():  # warm every path
        for slug in AGENTS:
            await _observe_block(t, url, slug, 10, 3)
    for _ in range(args.rounds):
        for slug in AGENTS:
            for chunks in OBSERVE_SIZES:
                turns = args.turns if chunks == 10 else max(3, args.turns // 3)
                for variant, (t, url) in targets.items():
                    samples[variant, slug, chunks].append(await _observe_block(t, url, slug, chunks, turns))
    for t, _ in targets.values():
        await t.app.aclose()
    return {f"{v}/{slug}/{n}": {"turn_ms": statistics.median(xs) * 1000, "rounds_ms": [round(x * 1000, 2) for x in xs]}
            for (v, slug, n), xs in samples.items()}


async def _get(app_url: str, path: str) -> Any:
    async with httpx.AsyncClient(base_url=app_url, timeout=60) as client:
        return (await client.get(path)).json()


# --- PostgreSQL --------------------------------------------------------------------------------------


def _pg(admin_url: str, statement: str) -> None:
    import asyncpg

    async def run() -> None:
        conn = await asyncpg.connect(admin_url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run())


def _pg_database(admin_url: str) -> tuple[str, str]:
    from sqlalchemy.engine import make_url

    name = f"agentloft_bench_{os.getpid()}"
    _pg(admin_url, f'CREATE DATABASE "{name}"')
    url = make_url(admin_url).set(drivername="postgresql+asyncpg", database=name)
    return name, url.render_as_string(hide_password=False)


# --- main ------------------------------------------------------------------------------------------


async def main(args: argparse.Namespace, database_url: str) -> None:
    fake_port, app_port = free_port(), free_port()
    fake_url, app_url = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{app_port}"
    scenarios = set(args.scenarios.split(","))
    with tempfile.TemporaryDirectory() as data:
        procs = [spawn("bench.stream_relay", "--serve-fake", str(fake_port)),
                 spawn("bench.turn_cost", "--serve", str(app_port), data, database_url, src=args.src)]
        try:
            await wait_up(f"{fake_url}/v1/models")
            await wait_up(f"{app_url}/api/health")
            t = Target(ByteClient("127.0.0.1", app_port), ByteClient("127.0.0.1", fake_port), procs[1].pid)
            t.auth = await _setup(app_url, fake_url)
            results: dict[str, Any] = {"db": "postgresql" if database_url else "sqlite"}
            if "cpu" in scenarios:
                results["cpu"] = await scenario_cpu(t, args, app_url)
            if "first" in scenarios:
                results["first"] = await scenario_first(t, args)
            if "concurrent" in scenarios:
                results["concurrent"] = await scenario_concurrent(t, args)
            if "memory" in scenarios:
                results["memory"] = await scenario_memory(t, args, app_url)
            if "usage" in scenarios:
                results["usage"] = await scenario_usage(t, args, app_url)
            if "observe" in scenarios:
                results["observe"] = await scenario_observe(args, fake_url, t.fake, procs, data)
            wal = Path(data) / "agentloft.core.db-wal"
            results["wal_mb"] = wal.stat().st_size / 2**20 if wal.exists() else None
            report(args, results)
            await t.app.aclose()
            await t.fake.aclose()
        finally:
            for p in procs:
                p.send_signal(signal.SIGINT)
            for p in procs:
                try:
                    p.wait(15)
                except subprocess.TimeoutExpired:
                    p.kill()


def report(args: argparse.Namespace, r: dict[str, Any]) -> None:
    wal = f"; SQLite write-ahead log at the end: {r['wal_mb']:.1f} MB" if r.get("wal_mb") is not None else ""
    print(f"database: {r['db']}; load average at the end: {os.getloadavg()[0]:.1f}{wal}")
    if "cpu" in r:
        print(f"cpu: server CPU per chat, {args.turn_kind} turns, medians of {args.rounds} rounds")
        print(f"  {'agent/auth':18s} {'per turn':>9s} {'per chunk':>10s} {'10-chunk chat':>14s} "
              f"{'2000-chunk chat':>16s}")
        for name, v in r["cpu"].items():
            print(f"  {name:18s} {v['turn_ms']:7.2f}ms {v['chunk_us']:8.2f}us {v['chat10_ms']:12.2f}ms "
                  f"{v['chat2000_ms']:14.2f}ms")
        for slug in AGENTS:
            cookie, token = r["cpu"][f"{slug}/cookie"], r["cpu"][f"{slug}/token"]
            print(f"  token / cookie, {AGENTS[slug]}: per turn {token['turn_ms'] / cookie['turn_ms']:.3f}")
    if "first" in r:
        f = r["first"]
        print(f"first text, the Assistant, 2000 chunks (median of {args.first_runs}): floor {f['floor_ms']:.1f} ms, "
              f"chat {f['chat_ms']:.1f} ms (+{f['chat_ms'] - f['floor_ms']:.1f} ms)")
    if "concurrent" in r:
        c = r["concurrent"]
        print(f"concurrent: {args.concurrent} x {args.concurrent_chunks} chunks, medians of {args.rounds} rounds: "
              f"floor {c['floor_s']:.2f} s")
        for slug in AGENTS:
            print(f"  {AGENTS[slug]:22s} {c[slug + '_s']:.2f} s ({c[slug + '_ratio']:.2f}x; "
                  f"rounds {c['ratios'][slug]})")
    if "usage" in r:
        u = r["usage"]
        base = u["off"]
        print(f"usage: follow-up turns of the agent without tools, 10 chunks, {args.rounds} rounds of {args.turns}, "
              f"variants' order rotated; vs baseline: median of the rounds' differences from that round's baseline")
        for name, v in u.items():
            rounds = "" if name == "off" else f"; rounds {v['diffs_ms']}"
            print(f"  {USAGE_VARIANTS[name]:26s} {v['turn_ms']:6.2f} ms/turn ({v['diff_ms']:+.2f} ms), "
                  f"{v['statements']:.1f} statements, {v['transactions']:.1f} transactions per turn{rounds}")
        print(f"  (baseline blocks: {base['turn_ms']:.2f} ms median)")
    if "observe" in r:
        o = r["observe"]
        print(f"observe: server CPU per follow-up turn, medians of {args.rounds} rounds, against neither")
        for slug in AGENTS:
            for n in OBSERVE_SIZES:
                base = o[f"off/{slug}/{n}"]["turn_ms"]
                print(f"  {AGENTS[slug]}, {n} chunks:")
                for v, label in OBSERVE_VARIANTS.items():
                    if f"{v}/{slug}/{n}" not in o:
                        continue
                    x = o[f"{v}/{slug}/{n}"]
                    print(f"    {label:26s} {x['turn_ms']:7.2f} ms ({x['turn_ms'] / base:.3f}x, "
                          f"{x['turn_ms'] - base:+.2f} ms; rounds {x['rounds_ms']})")
    if "memory" in r:
        m = r["memory"]
        after = ", ".join(f"+{s}s {mb:.0f}" for s, mb in m["after"])
        print(f"memory: idle {m['idle_mb']:.0f} MB, peak under {args.burst} concurrent chats {m['peak_mb']:.0f} MB, "
              f"after: {after} MB; server: {m['server']}")


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenarios", default="cpu,first,concurrent,memory")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--turns", type=int, default=30, help="chats per block of 10-chunk chats (a third for 2,000)")
    p.add_argument("--turn-kind", choices=("follow-up", "new"), default="follow-up")
    p.add_argument("--first-runs", type=int, default=20)
    p.add_argument("--concurrent", type=int, default=50)
    p.add_argument("--concurrent-chunks", type=int, default=500)
    p.add_argument("--burst", type=int, default=200)
    p.add_argument("--trim", action="store_true", help="after the memory scenario, collect and trim (diagnostic)")
    p.add_argument("--postgres", help="admin URL of a PostgreSQL server (a database is created and dropped)")
    p.add_argument("--profile", help="cProfile output of the cpu and usage scenarios' measured chats")
    p.add_argument("--observe-before", metavar="SRC",
                   help="observe: also a server with every trace sampled whose agentloft comes from SRC")
    p.add_argument("--src", default=str(ROOT / "src"),
                   help="the agentloft package the server imports (default: this checkout's, not the installed one)")
    p.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    p.add_argument("--serve-otlp", type=int, help=argparse.SUPPRESS)
    return p.parse_args()


if __name__ == "__main__":
    ns = _args()
    if ns.serve:
        serve(int(ns.serve[0]), ns.serve[1], ns.serve[2])
    elif ns.serve_otlp:
        serve_otlp(ns.serve_otlp)
    elif ns.postgres:
        db_name, db_url = _pg_database(ns.postgres)
        try:
            asyncio.run(main(ns, db_url))
        finally:
            _pg(ns.postgres, f'DROP DATABASE IF EXISTS "{db_name}" WITH (FORCE)')
    else:
        asyncio.run(main(ns, ""))
    sys.exit(0)
