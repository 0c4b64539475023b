"""Stream relay benchmark: what the chat path costs on top of the model's own stream.

The fake OpenAI-compatible model (tests/fakes) streams as fast as it can, in its own process; agentloft
runs in another (so its resident memory can be read); this process is the client. Baseline, measured in
the same run: the fake model's stream read directly with httpx (the floor). Then:

(a) time to first text and total time of a 2,000-chunk reply through ``POST /api/agents/{slug}/chat``,
    20 runs (medians; each run saves its session and both messages, as a real chat does);
(b) 50 concurrent chats of 500 chunks each: wall time and per-chat p50 / p99, in ``--rounds`` rounds of
    floor-then-chat (the floor of 50 concurrent streams moves by ±40% from one run to the next on a shared
    machine, so one pair says little; the medians of the rounds and each round's ratio are printed);
(c) the server's resident memory, idle and at the peak of (b).

Each is printed with its ratio to the baseline. Not a test; numbers go to docs/benchmarks.md.

    python -m bench.stream_relay [--runs 20] [--chunks 2000] [--concurrent 50] [--concurrent-chunks 500]
                                 [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import signal
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.fakes.openai_server import free_port

from bench.common import serve_app, spawn, wait_up

# --- server processes ------------------------------------------------------------------------------



def serve_fake(port: int) -> None:
    """The fake model: a reply of N chunks where N is the number in the last user message."""
    import uvicorn
    from tests.fakes.openai_server import FakeModel, Step, _last_user_text, build_app

    fake = FakeModel()

    def reply(body: dict) -> Step:
        words = _last_user_text(body).split()
        n = int(words[-1]) if words and words[-1].isdigit() else 10
        return Step(text="tok " * n, chunks=n)

    fake.default = reply
    fake.next_step = lambda body, headers=None: reply(body)  # type: ignore[method-assign]  # no request log
    uvicorn.run(build_app(fake), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


# --- clients -----------------------------------------------------------------------------------------


@dataclass
class Timing:
    first: float
    total: float


async def _read(resp: httpx.Response, started: float, marker: bytes, failure: bytes | None = None) -> Timing:
    """Time to the first ``marker`` and to the end; a reply with ``failure`` in it stops the benchmark (a
    failed chat ends early and would flatter the figures)."""
    first = 0.0
    tail = b""
    async for raw in resp.aiter_raw():
        if not first and marker in raw:
            first = time.perf_counter() - started
        if failure is not None and failure in tail + raw:
            raise RuntimeError(f"a relayed chat failed: {(tail + raw)[:300]!r}")
        tail = raw[-64:]
    return Timing(first=first, total=time.perf_counter() - started)


async def direct(client: httpx.AsyncClient, fake_url: str, n: int) -> Timing:
    body = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": f"go {n}"}]}
    started = time.perf_counter()
    async with client.stream("POST", f"{fake_url}/v1/chat/completions", json=body) as resp:
        return await _read(resp, started, b'"content": "tok')


async def relayed(client: httpx.AsyncClient, app_url: str, slug: str, n: int) -> Timing:
    started = time.perf_counter()
    async with client.stream("POST", f"{app_url}/api/agents/{slug}/chat", json={"message": f"go {n}"}) as resp:
        resp.raise_for_status()
        return await _read(resp, started, b'"text-delta"', failure=b'"type":"error"')


def _pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


async def _signed_in(app_url: str) -> httpx.AsyncClient:
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    client = httpx.AsyncClient(base_url=app_url, timeout=120, limits=limits)
    await client.get("/api/health")
    r = await client.post("/api/auth/signup", json={"username": "bench", "password": "password123"},
                          headers={"X-CSRF-Token": client.cookies.get("agentloft_csrf", "")})
    r.raise_for_status()
    client.headers["X-CSRF-Token"] = client.cookies.get("agentloft_csrf", "")
    return client


async def _setup(client: httpx.AsyncClient, fake_url: str) -> str:
    model = (await client.post("/api/admin/models", json={"name": "Fake", "provider": "openai",
                                                           "baseUrl": f"{fake_url}/v1", "model": "fake",
                                                           "isDefault": True})).json()
    r = await client.post("/api/admin/agents", json={"slug": "bench", "name": "Bench", "modelId": model["id"],
                                                      "maxOutputTokens": 100_000})
    r.raise_for_status()
    return "bench"


async def scenario_a(app: httpx.AsyncClient, raw: httpx.AsyncClient, fake_url: str, app_url: str, slug: str,
                     runs: int, chunks: int) -> dict[str, float]:
    for _ in range(2):  # warm both paths (imports, connection pools)
        await direct(raw, fake_url, chunks)
        await relayed(app, app_url, slug, chunks)
    base, relay = [], []
    for _ in range(runs):  # interleaved, so drift in machine load hits both alike
        base.append(await direct(raw, fake_url, chunks))
        relay.append(await relayed(app, app_url, slug, chunks))
    return {
        "base_first_ms": statistics.median(t.first for t in base) * 1000,
        "base_total_ms": statistics.median(t.total for t in base) * 1000,
        "first_ms": statistics.median(t.first for t in relay) * 1000,
        "total_ms": statistics.median(t.total for t in relay) * 1000,
    }


async def _concurrent(make: object, n: int) -> tuple[float, list[float]]:
    started = time.perf_counter()
    timings = await asyncio.gather(*(make() for _ in range(n)))  # type: ignore[operator]
    return time.perf_counter() - started, [t.total for t in timings]


async def scenario_b(app: httpx.AsyncClient, raw: httpx.AsyncClient, fake_url: str, app_url: str, slug: str,
                     n: int, chunks: int, pid: int, rounds: int) -> dict[str, float]:
    """``rounds`` rounds of floor-then-chat; medians over the rounds (the peak memory is the highest)."""
    results = [await _round_b(app, raw, fake_url, app_url, slug, n, chunks, pid) for _ in range(rounds)]
    out = {key: statistics.median(r[key] for r in results) for key in results[0]}
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in results)
    out["ratios"] = [r["wall_s"] / r["base_wall_s"] for r in results]  # type: ignore[assignment]
    return out


async def _round_b(app: httpx.AsyncClient, raw: httpx.AsyncClient, fake_url: str, app_url: str, slug: str,
                   n: int, chunks: int, pid: int) -> dict[str, float]:
    base_wall, base_each = await _concurrent(lambda: direct(raw, fake_url, chunks), n)
    peak = rss_mb(pid)
    stop = asyncio.Event()

    async def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, rss_mb(pid))
            await asyncio.sleep(0.02)

    sampler = asyncio.create_task(sample())
    wall, each = await _concurrent(lambda: relayed(app, app_url, slug, chunks), n)
    stop.set()
    await sampler
    return {
        "base_wall_s": base_wall, "base_p50_s": _pct(base_each, 50), "base_p99_s": _pct(base_each, 99),
        "wall_s": wall, "p50_s": _pct(each, 50), "p99_s": _pct(each, 99), "peak_rss_mb": peak,
    }


async def main(args: argparse.Namespace) -> None:
    fake_port, app_port = free_port(), free_port()
    fake_url, app_url = f"http://127.0.0.1:{fake_port}", f"http://127.0.0.1:{app_port}"
    with tempfile.TemporaryDirectory() as data:
        procs = [spawn("bench.stream_relay", "--serve-fake", str(fake_port)),
                 spawn("bench.stream_relay", "--serve-app", str(app_port), data)]
        try:
            await wait_up(f"{fake_url}/v1/models")
            await wait_up(f"{app_url}/api/health")
            app = await _signed_in(app_url)
            raw = httpx.AsyncClient(timeout=120, limits=httpx.Limits(max_connections=200))
            slug = await _setup(app, fake_url)
            await asyncio.sleep(1)
            idle = rss_mb(procs[1].pid)
            a = await scenario_a(app, raw, fake_url, app_url, slug, args.runs, args.chunks)
            b = await scenario_b(app, raw, fake_url, app_url, slug, args.concurrent, args.concurrent_chunks,
                                 procs[1].pid, args.rounds)
            report(args, a, b, idle)
            await app.aclose()
            await raw.aclose()
        finally:
            for p in procs:
                p.send_signal(signal.SIGINT)
            for p in procs:
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()


def report(args: argparse.Namespace, a: dict[str, float], b: dict[str, float], idle: float) -> None:
    print(f"(a) {args.runs} runs of a {args.chunks}-chunk reply (medians)")
    print(f"    floor: first text {a['base_first_ms']:.1f} ms, total {a['base_total_ms']:.1f} ms")
    print(f"    chat : first text {a['first_ms']:.1f} ms (+{a['first_ms'] - a['base_first_ms']:.1f} ms), "
          f"total {a['total_ms']:.1f} ms ({a['total_ms'] / a['base_total_ms']:.2f}x)")
    ratios = ", ".join(f"{r:.2f}x" for r in b["ratios"])  # type: ignore[attr-defined]
    print(f"(b) {args.concurrent} concurrent chats of {args.concurrent_chunks} chunks, "
          f"medians of {args.rounds} rounds")
    print(f"    floor: wall {b['base_wall_s']:.2f} s, p50 {b['base_p50_s']:.2f} s, p99 {b['base_p99_s']:.2f} s")
    print(f"    chat : wall {b['wall_s']:.2f} s ({b['wall_s'] / b['base_wall_s']:.2f}x), "
          f"p50 {b['p50_s']:.2f} s ({b['p50_s'] / b['base_p50_s']:.2f}x), "
          f"p99 {b['p99_s']:.2f} s ({b['p99_s'] / b['base_p99_s']:.2f}x)")
    print(f"    wall ratio of each round: {ratios} (median {statistics.median(b['ratios']):.2f}x)")  # type: ignore[arg-type]
    print(f"(c) server resident memory: idle {idle:.0f} MB, peak under (b) {b['peak_rss_mb']:.0f} MB")


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--chunks", type=int, default=2000)
    p.add_argument("--concurrent", type=int, default=50)
    p.add_argument("--concurrent-chunks", type=int, default=500)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--serve-fake", type=int, help=argparse.SUPPRESS)
    p.add_argument("--serve-app", nargs=2, help=argparse.SUPPRESS)
    return p.parse_args()


if __name__ == "__main__":
    ns = _args()
    if ns.serve_fake:
        serve_fake(ns.serve_fake)
    elif ns.serve_app:
        serve_app(int(ns.serve_app[0]), ns.serve_app[1])
    else:
        asyncio.run(main(ns))
