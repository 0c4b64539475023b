"""Scale-out benchmark: what Redis buffers and several workers cost, and what they give.

Processes: the fake OpenAI-compatible model (streams as fast as it can, or 5 ms per chunk for (c)),
agentloft (as ``agentloft serve``, or a bench entry for (a)), and this process as the client. Every chat is
``POST /api/agents/{slug}/chat`` read to its end, saving its session and messages as a real chat does.

(a) stream buffers in Redis vs in memory, one worker on SQLite, ``--concurrent`` (50) chats of 500 chunks:
    wall time of each round, the three servers' rounds interleaved; Redis twice, with one stream entry
    per flush of the writer (what agentloft does) and with one entry per frame. Goal: Redis ≤ 1.25×.
(b) one worker vs two (``agentloft serve --workers N``, PostgreSQL + Redis), 200 and 400 (``--loads``) chats of
    500 chunks through one port: errors, per-chat p50 / p99, wall, and the server's CPU seconds per chat
    (every process of the server). Goal: 0 errors, p99 with two workers within 1.2× of one.
(d) from the same runs with two workers, plus 50 and 100 chats (``--growth``): how wall time grows with load.
(c) following a running reply: time to the first replayed frame of ``GET …/stream`` on the worker that
    writes the reply vs on another worker (two ``agentloft serve`` processes). Goal: within +20 ms.

    python -m bench.scale_out --postgres postgresql+asyncpg://role:pw@127.0.0.1/postgres \\
        --redis redis://127.0.0.1:6379/0 [--parts abcd] [--rounds 3] [--follows 20]

The PostgreSQL role needs CREATEDB: each server gets a database of its own, dropped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
from sqlalchemy.engine import make_url
from tests.fakes.openai_server import free_port

from bench.common import ROOT, spawn, wait_up

CHUNKS = 500

# --- server processes --------------------------------------------------------------------------------


def serve_fake(port: int) -> None:
    """The fake model: N chunks for a last user message ending in N; 5 ms between chunks if it says slow."""
    import uvicorn
    from tests.fakes.openai_server import FakeModel, Step, _last_user_text, build_app

    fake = FakeModel()

    def reply(body: dict[str, Any]) -> Step:
        words = _last_user_text(body).split()
        n = next((int(w) for w in reversed(words) if w.isdigit()), 10)
        return Step(text="tok " * n, chunks=n, delay=0.005 if "slow" in words else 0.0)

    fake.default = reply
    fake.next_step = lambda body, headers=None: reply(body)  # type: ignore[method-assign]  # no request log
    uvicorn.run(build_app(fake), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def serve_app(port: int, data_dir: str, redis_url: str, per_frame: bool) -> None:
    """One worker on SQLite for (a): buffers in memory (no ``redis_url``), or in Redis with one stream entry
    per writer flush, or (``per_frame``) one entry per frame."""
    import uvicorn

    from agentloft.app import create_app
    from agentloft.core.settings import load_settings

    if per_frame:  # imported only then: a worker without Redis leaves the client library unimported
        from agentloft.chat.buffers_redis import RedisStreamBuffers

        RedisStreamBuffers.JOIN_FRAMES = False
    settings = load_settings(data_dir=Path(data_dir), env="test", secret_key="bench-secret", create_defaults=False,
                             redis_url=redis_url or None, redis_prefix=f"bench-{secrets.token_hex(4)}",
                             max_running_chats_per_user=0)  # one bench user runs hundreds of chats at once
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning", access_log=False)


@dataclass
class Served:
    """``agentloft serve`` in a child process, with its own data directory."""

    env: dict[str, str]
    workers: int = 1
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, data_dir: str) -> Served:
        env = {**os.environ, **self.env, "AGENTLOFT_DATA_DIR": data_dir, "AGENTLOFT_PORT": str(self.port),
               "AGENTLOFT_ENV": "test", "AGENTLOFT_SECRET_KEY": "bench-secret",
               "AGENTLOFT_CREATE_DEFAULTS": "false", "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "agentloft.cli", "serve", "--workers",
                                      str(self.workers), "--log-level", "warning"], cwd=ROOT, env=env)
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(60)


def cpu_seconds(root: int) -> float:
    """User + system CPU of a process and all its descendants (uvicorn's workers are its children)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    tick = os.sysconf("SC_CLK_TCK")
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / tick
    tree, frontier = {root}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, ppid in parents.items():
            if ppid == parent and pid not in tree:
                tree.add(pid)
                frontier.append(pid)
    return sum(times.get(pid, 0.0) for pid in tree)


# --- databases ---------------------------------------------------------------------------------------


class Databases:
    """Databases of this run on the PostgreSQL server, dropped at the end."""

    def __init__(self, admin_url: str) -> None:
        self.admin = make_url(admin_url)
        self.names: list[str] = []

    async def _execute(self, sql: str) -> None:
        conn = await asyncpg.connect(host=self.admin.host, port=self.admin.port, user=self.admin.username,
                                     password=self.admin.password, database=self.admin.database)
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    async def create(self) -> str:
        name = f"agentloft_bench_{os.getpid()}_{len(self.names)}"
        await self._execute(f'CREATE DATABASE "{name}"')
        self.names.append(name)
        return self.admin.set(drivername="postgresql+asyncpg", database=name).render_as_string(hide_password=False)

    async def drop_all(self) -> None:
        for name in self.names:
            await self._execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# --- clients -----------------------------------------------------------------------------------------


async def signed_in(url: str, *, first: bool = True, cookies: httpx.Cookies | None = None) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
    client = httpx.AsyncClient(base_url=url, timeout=300, limits=limits, cookies=cookies)
    await client.get("/api/health")
    client.headers["X-CSRF-Token"] = client.cookies.get("agentloft_csrf", "")
    if first:
        r = await client.post("/api/auth/signup", json={"username": "bench", "password": "password123"})
        r.raise_for_status()
        client.headers["X-CSRF-Token"] = client.cookies.get("agentloft_csrf", "")
    return client


async def set_up(client: httpx.AsyncClient, fake_url: str) -> None:
    model = (await client.post("/api/admin/models", json={"name": "Fake", "provider": "openai",
                                                           "baseUrl": f"{fake_url}/v1", "model": "fake",
                                                           "isDefault": True})).json()
    r = await client.post("/api/admin/agents", json={"slug": "bench", "name": "Bench", "modelId": model["id"],
                                                      "maxOutputTokens": 100_000})
    r.raise_for_status()


async def one_chat(client: httpx.AsyncClient, message: str) -> float:
    """Seconds from the request to the end of the reply; raises when the chat failed."""
    started = time.perf_counter()
    async with client.stream("POST", "/api/agents/bench/chat", json={"message": message}) as resp:
        if resp.status_code != 200:
            raise RuntimeError(f"HTTP {resp.status_code}: {(await resp.aread())[:200]!r}")
        tail = b""
        async for raw in resp.aiter_raw():
            if b'"type":"error"' in tail + raw:
                raise RuntimeError(f"a chat failed: {(tail + raw)[:300]!r}")
            tail = raw[-64:]
        if b"[DONE]" not in tail:
            raise RuntimeError("a chat ended without [DONE]")
    return time.perf_counter() - started


@dataclass
class Round:
    wall: float
    each: list[float]
    errors: int
    cpu: float = 0.0


async def concurrent(client: httpx.AsyncClient, n: int, chunks: int = CHUNKS, pid: int | None = None) -> Round:
    cpu_before = cpu_seconds(pid) if pid else 0.0
    started = time.perf_counter()
    results = await asyncio.gather(*(one_chat(client, f"go {chunks}") for _ in range(n)), return_exceptions=True)
    wall = time.perf_counter() - started
    each = [r for r in results if isinstance(r, float)]
    errors = [r for r in results if not isinstance(r, float)]
    if errors:
        print(f"  {len(errors)} errors, first: {errors[0]!r}", flush=True)
    return Round(wall=wall, each=each, errors=len(errors), cpu=(cpu_seconds(pid) - cpu_before) if pid else 0.0)


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values) or [float("nan")]
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


# --- the parts ---------------------------------------------------------------------------------------


async def part_a(args: argparse.Namespace, fake_url: str, tmp: str) -> None:
    print(f"\n(a) buffers: memory vs Redis, one worker on SQLite, {args.concurrent} chats × {CHUNKS} chunks, "
          f"{args.rounds} rounds interleaved", flush=True)
    variants = {"memory": ("", "0"), "redis, entry per flush": (args.redis, "0"),
                "redis, entry per frame": (args.redis, "1")}
    servers: dict[str, tuple[str, subprocess.Popen[bytes]]] = {}
    for name, (redis_url, per_frame) in variants.items():
        port = free_port()
        data = tempfile.mkdtemp(dir=tmp)
        servers[name] = (f"http://127.0.0.1:{port}",
                         spawn("bench.scale_out", "--serve-app", str(port), data, redis_url or "-", per_frame))
    try:
        clients = {}
        for name, (url, _) in servers.items():
            await wait_up(f"{url}/api/health", 180)
            clients[name] = await signed_in(url)
            await set_up(clients[name], fake_url)
            await concurrent(clients[name], 10)  # warm up
        walls: dict[str, list[float]] = {name: [] for name in servers}
        cpus: dict[str, list[float]] = {name: [] for name in servers}
        for _ in range(args.rounds):
            for name, client in clients.items():
                result = await concurrent(client, args.concurrent, pid=servers[name][1].pid)
                walls[name].append(result.wall)
                cpus[name].append(result.cpu)
        base, base_cpu = statistics.median(walls["memory"]), statistics.median(cpus["memory"])
        for name, values in walls.items():
            ratios = ", ".join(f"{w / m:.2f}x" for w, m in zip(values, walls["memory"], strict=True))
            cpu = statistics.median(cpus[name])
            print(f"  {name:24s} wall median {statistics.median(values):6.2f} s  "
                  f"ratio {statistics.median(values) / base:.2f}x  (rounds: {ratios}); server CPU "
                  f"{cpu / args.concurrent * 1000:5.1f} ms/chat ({cpu / base_cpu:.2f}x)", flush=True)
    finally:
        for _, proc in servers.values():
            proc.terminate()
            proc.wait(60)


async def part_bd(args: argparse.Namespace, fake_url: str, tmp: str, dbs: Databases) -> None:
    print(f"\n(b, d) one worker vs two, PostgreSQL + Redis, chats of {CHUNKS} chunks through one port, "
          f"{args.rounds_b} round(s) each", flush=True)
    table: dict[tuple[int, int], list[Round]] = {}
    compared = [int(n) for n in args.loads.split(",")]
    grown = sorted({int(n) for n in args.growth.split(",")} | set(compared))
    for workers, loads in ((1, compared), (2, grown)):
        env = {"AGENTLOFT_DATABASE_URL": await dbs.create(), "AGENTLOFT_REDIS_URL": args.redis,
               "AGENTLOFT_REDIS_PREFIX": f"bench-{secrets.token_hex(4)}"}
        served = Served(env, workers=workers).start(tempfile.mkdtemp(dir=tmp))
        try:
            await wait_up(f"{served.url}/api/health", 180)
            client = await signed_in(served.url)
            await set_up(client, fake_url)
            await concurrent(client, 20)  # warm up every worker
            assert served.proc is not None
            for _ in range(args.rounds_b):
                for n in loads:
                    table.setdefault((workers, n), []).append(await concurrent(client, n, pid=served.proc.pid))
            await client.aclose()
        finally:
            served.stop()
    for (workers, n), rounds in sorted(table.items()):
        each = [t for r in rounds for t in r.each]
        print(f"  {workers} worker(s), {n:3d} chats: errors {sum(r.errors for r in rounds)}, "
              f"wall {statistics.median(r.wall for r in rounds):6.2f} s, p50 {pct(each, 50):6.2f} s, "
              f"p99 {pct(each, 99):6.2f} s, CPU {statistics.median(r.cpu for r in rounds) / n * 1000:6.1f} ms/chat",
              flush=True)
    for n in compared:
        one = pct([t for r in table[(1, n)] for t in r.each], 99)
        two = pct([t for r in table[(2, n)] for t in r.each], 99)
        print(f"  p99 two workers / one worker at {n}: {two / one:.2f}x", flush=True)


async def _first_frame(client: httpx.AsyncClient, session_id: str) -> float:
    started = time.perf_counter()
    async with client.stream("GET", f"/api/agent-sessions/{session_id}/stream") as resp:
        async for raw in resp.aiter_raw():
            if raw:
                return time.perf_counter() - started
    raise RuntimeError("the stream ended without a frame")


async def part_c(args: argparse.Namespace, fake_url: str, tmp: str, dbs: Databases) -> None:
    print(f"\n(c) first replayed frame of a running reply: the writing worker vs another, {args.follows} "
          f"follows each", flush=True)
    env = {"AGENTLOFT_DATABASE_URL": await dbs.create(), "AGENTLOFT_REDIS_URL": args.redis,
           "AGENTLOFT_REDIS_PREFIX": f"bench-{secrets.token_hex(4)}"}
    writer = Served(env).start(tempfile.mkdtemp(dir=tmp))
    await wait_up(f"{writer.url}/api/health", 180)  # the first one migrates the database
    other = Served(env).start(tempfile.mkdtemp(dir=tmp))
    try:
        await wait_up(f"{other.url}/api/health", 180)
        on_writer = await signed_in(writer.url)
        await set_up(on_writer, fake_url)
        on_other = await signed_in(other.url, first=False, cookies=on_writer.cookies)
        on_other.headers["X-CSRF-Token"] = on_writer.headers["X-CSRF-Token"]
        same: list[float] = []
        elsewhere: list[float] = []
        for i in range(args.follows + 2):
            async with on_writer.stream("POST", "/api/agents/bench/chat", json={"message": f"go slow {CHUNKS}"}
                                        ) as resp:
                session_id = resp.headers["x-session-id"]
                body = resp.aiter_raw()
                async for raw in body:
                    if b'"text-delta"' in raw:
                        break
                await asyncio.sleep(0.3)  # a few dozen chunks in
                pair = [(same, on_writer), (elsewhere, on_other)]
                for into, client in pair if i % 2 else reversed(pair):
                    took = await _first_frame(client, session_id)
                    if i >= 2:  # the first two warm both paths up
                        into.append(took)
                async for _ in body:
                    pass
        a, b = statistics.median(same) * 1000, statistics.median(elsewhere) * 1000
        print(f"  writing worker: median {a:5.1f} ms (p90 {pct(same, 90) * 1000:5.1f})  other worker: median "
              f"{b:5.1f} ms (p90 {pct(elsewhere, 90) * 1000:5.1f})  difference {b - a:+.1f} ms", flush=True)
    finally:
        writer.stop()
        other.stop()


def _machine() -> str:
    load = os.getloadavg()
    return (f"{platform.platform()}, {os.cpu_count()} CPUs, load average {load[0]:.1f} / {load[1]:.1f} / "
            f"{load[2]:.1f}, Python {platform.python_version()}")


async def main(args: argparse.Namespace) -> None:
    print(f"machine: {_machine()}  ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())})", flush=True)
    fake_port = free_port()
    fake_url = f"http://127.0.0.1:{fake_port}"
    fake = spawn("bench.scale_out", "--serve-fake", str(fake_port))
    dbs = Databases(args.postgres)
    try:
        await wait_up(f"{fake_url}/v1/models")
        with tempfile.TemporaryDirectory() as tmp:
            parts: dict[str, Callable[[], Awaitable[None]]] = {
                "a": lambda: part_a(args, fake_url, tmp),
                "b": lambda: part_bd(args, fake_url, tmp, dbs),
                "c": lambda: part_c(args, fake_url, tmp, dbs),
            }
            for name, run in parts.items():
                if name in args.parts:
                    await run()
    finally:
        fake.terminate()
        fake.wait(30)
        await dbs.drop_all()
    print(f"\nmachine at the end: {_machine()}", flush=True)


def cli() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--serve-fake":
        serve_fake(int(sys.argv[2]))
        return
    if len(sys.argv) > 5 and sys.argv[1] == "--serve-app":
        serve_app(int(sys.argv[2]), sys.argv[3], "" if sys.argv[4] == "-" else sys.argv[4], sys.argv[5] == "1")
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres", default=os.environ.get("AGENTLOFT_TEST_POSTGRES_URL"),
                        help="an admin URL on the PostgreSQL server (a role with CREATEDB)")
    parser.add_argument("--redis", default=os.environ.get("AGENTLOFT_TEST_REDIS_URL"), help="a Redis URL")
    parser.add_argument("--parts", default="abc", help="which parts to run: a, b (with d), c")
    parser.add_argument("--concurrent", type=int, default=50, help="(a): chats at once")
    parser.add_argument("--rounds", type=int, default=3, help="(a): rounds per variant")
    parser.add_argument("--rounds-b", type=int, default=1, help="(b, d): rounds per load")
    parser.add_argument("--loads", default="200,400", help="(b): chats at once, one worker vs two")
    parser.add_argument("--growth", default="50,100,200,400", help="(d): chats at once on two workers")
    parser.add_argument("--follows", type=int, default=20, help="(c): follows per worker")
    args = parser.parse_args()
    if not args.postgres or not args.redis:
        parser.error("--postgres and --redis are needed (or AGENTLOFT_TEST_POSTGRES_URL / AGENTLOFT_TEST_REDIS_URL)")
    asyncio.run(main(args))


if __name__ == "__main__":
    cli()
