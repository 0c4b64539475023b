"""Sign-in flood: how slow ``GET /api/auth/me`` gets while 20 sign-ins run at once, against the same
request with nothing else going on, in the same run.

Argon2 takes tens of milliseconds of CPU per password check by design. Run on the event loop, 20
parallel sign-ins held every other request for their sum (``/api/auth/me`` went from 3 ms to 450 ms);
``auth.service`` now checks passwords on its own threads. Goal: ``/me`` p95 under 50 ms during the
flood. ``--on-loop`` serves a second app that checks passwords on the loop, as before, for comparison.

Three processes' worth of work: the app in its own process, and this one sending the flood (20 accounts
signing in at once, round after round; every sign-in is a real password check) while another task asks
``/me`` one request after another and times each.

    python -m bench.login_flood [--rounds 10] [--baseline 200] [--on-loop]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.common import serve_app, spawn, stop_all, wait_up
from bench.latency import Latency, probe_times

ACCOUNTS = 20
PASSWORD = "password123"


class _OnTheLoop(Executor):
    """An executor that runs the call right away in the caller's thread: the event loop, as before."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        done: Future[Any] = Future()
        done.set_result(fn(*args, **kwargs))
        return done


def _serve(port: int, data_dir: str, on_loop: bool) -> None:
    if on_loop:
        from agentloft.auth import service

        # The old behaviour, for comparison (a private member of our own module, in a benchmark only).
        service._HASHING = _OnTheLoop()  # pyright: ignore[reportAttributeAccessIssue]
    serve_app(port, data_dir)


async def _setup(base: str) -> dict[str, str]:
    """The admin and ``ACCOUNTS`` users; the admin's cookies (for ``/me``)."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        await c.get("/api/health")
        r = await c.post("/api/auth/signup", json={"username": "admin", "password": PASSWORD})
        r.raise_for_status()
        headers = {"X-CSRF-Token": c.cookies["agentloft_csrf"]}
        for i in range(ACCOUNTS):
            r = await c.post("/api/admin/users", json={"username": f"user{i}", "password": PASSWORD},
                             headers=headers)
            r.raise_for_status()
        return dict(c.cookies)


async def _me_times(base: str, cookies: dict[str, str], until: Callable[[], bool], least: int) -> Latency:
    """Time ``/me`` one request after another until ``until()`` (and at least ``least`` times)."""
    async with httpx.AsyncClient(base_url=base, cookies=cookies, timeout=60) as c:
        async def me() -> None:
            (await c.get("/api/auth/me")).raise_for_status()

        return await probe_times(me, until=until, least=least)


async def _flood_round(base: str) -> float:
    """``ACCOUNTS`` sign-ins at once, each on its own connection; the round's wall time."""
    async def one(i: int) -> None:
        async with httpx.AsyncClient(base_url=base, timeout=60) as c:
            r = await c.post("/api/auth/login", json={"username": f"user{i}", "password": PASSWORD})
            r.raise_for_status()

    start = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(ACCOUNTS)))
    return time.perf_counter() - start


async def _measure(base: str, rounds: int, baseline: int) -> dict[str, Any]:
    await wait_up(f"{base}/api/health")
    cookies = await _setup(base)
    quiet = await _me_times(base, cookies, lambda: True, baseline)
    flood_done = False
    round_times: list[float] = []

    async def flood() -> None:
        nonlocal flood_done
        for _ in range(rounds):
            round_times.append(await _flood_round(base))
        flood_done = True

    task = asyncio.create_task(flood())
    loud = await _me_times(base, cookies, lambda: flood_done, 1)
    await task
    return {"quiet": quiet, "loud": loud, "rounds": round_times}


def _report(name: str, result: dict[str, Any]) -> None:
    quiet, loud = result["quiet"], result["loud"]
    rounds = result["rounds"]
    print(f"{name}:")
    print(quiet.line("/me alone"))
    print(loud.line("/me during flood", quiet) + f"  ({'meets' if loud.p95_ms < 50 else 'misses'} the 50 ms goal)")
    print(f"  {ACCOUNTS} parallel sign-ins: median round {statistics.median(rounds) * 1000:.0f} ms "
          f"over {len(rounds)} rounds")


def _run(name: str, args: argparse.Namespace, on_loop: bool) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        extra = ("--on-loop",) if on_loop else ()
        proc: subprocess.Popen[bytes] = spawn("bench.login_flood", "--serve", str(port), data_dir, *extra)
        try:
            _report(name, asyncio.run(_measure(f"http://127.0.0.1:{port}", args.rounds, args.baseline)))
        finally:
            stop_all([proc])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--baseline", type=int, default=200, help="quiet /me requests for the baseline")
    parser.add_argument("--on-loop", action="store_true", help="also measure password checks on the loop")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(int(args.serve[0]), args.serve[1], args.on_loop)
        return
    # The flood is many sign-ins from one address: lift the per-address limit for the app processes.
    os.environ["AGENTLOFT_LOGIN_ADDRESS_MAX_ATTEMPTS"] = "1000000"
    _run("password checks on their own threads (now)", args, on_loop=False)
    if args.on_loop:
        _run("password checks on the event loop (before)", args, on_loop=True)


if __name__ == "__main__":
    main()
