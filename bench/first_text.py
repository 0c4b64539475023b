"""Where a chat's first text goes: wall and CPU time of each phase inside the server, from the request
reaching the app to the first ``text-delta`` frame leaving for the socket, next to the floor (the fake
model read directly) measured in the same run. A diagnostic for ``bench.stream_relay``'s (a) first text.

    python -m bench.first_text [--runs 60] [--chunks 2000] [--profile FROM TO --out FILE]

The app runs in a child process with marks wrapped around the functions that bound each phase (the
wrapping costs a few microseconds per mark). ``--profile`` records cProfile between two marks of every
request (for example ``run sent``: pydantic-ai's run start) into ``FILE`` for ``pstats``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextvars
import functools
import itertools
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.common import spawn, wait_up
from bench.stream_relay import _setup, _signed_in, direct, relayed

MARKS: contextvars.ContextVar[dict[str, tuple[float, float]] | None] = contextvars.ContextVar("marks", default=None)
ORDER = ["entry", "caller", "handler", "write", "written", "drive", "run", "sent", "headers", "text", "socket"]


class Recorder:
    """Marks of the current request (wall and this thread's CPU), and the optional profile window."""

    def __init__(self, profile: tuple[str, str] | None, out: str | None) -> None:
        import cProfile

        self.window, self.out = profile, out
        self.profiler = cProfile.Profile() if profile else None
        self.windows = 0

    def mark(self, name: str) -> None:
        marks = MARKS.get()
        if marks is None or name in marks:
            return
        marks[name] = (time.perf_counter(), time.thread_time())
        if self.profiler is not None and self.window is not None:
            if name == self.window[0]:
                self.profiler.enable()
            elif name == self.window[1]:
                self.profiler.disable()
                self.windows += 1
                if self.windows % 10 == 0:  # the server is stopped, not shut down: save as it goes
                    self.profiler.dump_stats(self.out or "first_text.prof")


def _before(rec: Recorder, owner: Any, attr: str, name: str, after: str | None = None) -> None:
    original = getattr(owner, attr)

    @functools.wraps(original)
    async def wrapped(*args: Any, **kwargs: Any) -> Any:
        rec.mark(name)
        try:
            return await original(*args, **kwargs)
        finally:
            if after:
                rec.mark(after)

    setattr(owner, attr, wrapped)


def serve(port: int, data_dir: str, log: str, profile: tuple[str, str] | None, out: str | None) -> None:
    import httpx2
    import uvicorn
    from pydantic_ai import Agent

    from agentloft.app import create_app
    from agentloft.auth import dependencies
    from agentloft.chat import engine, service, turns
    from agentloft.chat.buffers import MemoryStreamBuffers
    from agentloft.core.settings import load_settings

    rec = Recorder(profile, out)
    app = create_app(load_settings(data_dir=Path(data_dir), env="test", secret_key="bench-secret",
                                   create_defaults=False, max_running_chats_per_user=0))
    _before(rec, dependencies, "_optional_user", "caller")
    _before(rec, turns, "start_chat", "handler")
    _before(rec, service, "begin_turn", "write", "written")
    _before(rec, engine, "drive", "drive")
    _before(rec, httpx2.AsyncHTTPTransport, "handle_async_request", "sent", "headers")
    run_stream_events = Agent.run_stream_events

    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        rec.mark("run")
        return run_stream_events(self, *args, **kwargs)

    Agent.run_stream_events = run  # type: ignore[method-assign]
    append = MemoryStreamBuffers.append

    async def append_marked(self: Any, key: str, frame: str) -> None:
        if "text-delta" in frame:
            rec.mark("text")
        await append(self, key, frame)

    MemoryStreamBuffers.append = append_marked  # type: ignore[method-assign]

    async def asgi(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not scope["path"].endswith("/chat"):
            return await app(scope, receive, send)
        marks: dict[str, tuple[float, float]] = {}
        MARKS.set(marks)
        rec.mark("entry")

        async def sending(message: Any) -> None:
            body = message.get("body", b"") if message["type"] == "http.response.body" else b""
            if b"text-delta" in body and "socket" not in marks:
                rec.mark("socket")
                _append(log, marks)
            await send(message)

        await app(scope, receive, sending)

    uvicorn.run(asgi, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _append(log: str, marks: dict[str, tuple[float, float]]) -> None:
    with open(log, "a") as f:
        f.write(json.dumps(marks) + "\n")


def report(log: str, floor_ms: float, chat_ms: float) -> None:
    lines = Path(log).read_text().splitlines()
    rows = [json.loads(line) for line in lines[lines.index("{}") + 1:]]
    print(f"first text: floor {floor_ms:.2f} ms, chat {chat_ms:.2f} ms (+{chat_ms - floor_ms:.2f} ms); "
          f"{len(rows)} requests, medians inside the server:")
    print(f"  {'phase':22s} {'wall ms':>8s} {'cpu ms':>8s}")
    for start, end in itertools.pairwise(ORDER):
        pairs = [(r[end][0] - r[start][0], r[end][1] - r[start][1]) for r in rows if start in r and end in r]
        if pairs:
            wall, cpu = statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)
            print(f"  {start + ' -> ' + end:22s} {wall * 1000:8.2f} {cpu * 1000:8.2f}")
    total = [(r["socket"][0] - r["entry"][0], r["socket"][1] - r["entry"][1]) for r in rows]
    print(f"  {'entry -> socket':22s} {statistics.median(t[0] for t in total) * 1000:8.2f} "
          f"{statistics.median(t[1] for t in total) * 1000:8.2f}")


async def main(args: argparse.Namespace) -> None:
    fake_port, app_port = free_port(), free_port()
    fake_url, app_url = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{app_port}"
    with tempfile.TemporaryDirectory() as data:
        log = str(Path(data) / "marks.jsonl")
        extra = ["--profile", *args.profile, "--out", args.out] if args.profile else []
        procs = [spawn("bench.stream_relay", "--serve-fake", str(fake_port)),
                 spawn("bench.first_text", "--serve", str(app_port), data, log, *extra)]
        try:
            await wait_up(f"{fake_url}/v1/models")
            await wait_up(f"{app_url}/api/health")
            app, raw = await _signed_in(app_url), httpx.AsyncClient(timeout=60)
            slug = await _setup(app, fake_url)
            for _ in range(5):  # warm both paths
                await direct(raw, fake_url, args.chunks)
                await relayed(app, app_url, slug, args.chunks)
            _append(log, {})  # the warm-up requests end here (rows without marks are skipped)
            floor, chat = [], []
            for _ in range(args.runs):
                floor.append((await direct(raw, fake_url, args.chunks)).first)
                chat.append((await relayed(app, app_url, slug, args.chunks)).first)
        finally:
            for p in procs:
                p.terminate()
        report(log, statistics.median(floor) * 1000, statistics.median(chat) * 1000)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--profile", nargs=2, metavar=("FROM", "TO"), choices=ORDER)
    parser.add_argument("--out", default="first_text.prof")
    parser.add_argument("--serve", nargs=3, help=argparse.SUPPRESS)
    ns = parser.parse_args()
    if ns.serve:
        serve(int(ns.serve[0]), ns.serve[1], ns.serve[2], tuple(ns.profile) if ns.profile else None, ns.out)
    else:
        asyncio.run(main(ns))
