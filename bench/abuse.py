"""What one abusive user costs everyone else (issue 29, point 9): another user's ``GET /api/auth/me``, one
request after another, alone (the baseline, measured in the same run) and while each abuse runs, on the
code before the fixes and on this tree.

The abuses, one after another against one app (each with the pieces of its own benchmark):

1. **worst renders** (``bench.render_worst``): ``--render-clients`` clients send a 5,000-character
   ``autohotkey`` block of whitespace to ``POST /api/render/markdown`` back to back for
   ``--render-seconds``;
4. **chat search over long messages** (``bench.long_chat_search``): the abuser's ``--chats`` chats of one
   ``--chars``-character message each, searched ``--searches`` times for a term far into every message;
5. **a huge A2A request** (``bench.a2a_bounds``): a ``SendMessage`` of ``--parts`` one-letter parts, then one
   of a single ``--text-mb`` MB text part;
6. **a remote agent's huge event** (``bench.a2a_bounds``): a chat whose agent calls a remote agent that
   streams one ``--event-mb`` MB event.

The app runs in its own process on SQLite (``bench.long_chat_search``'s server), with the fake model and
the remote agent in theirs. "Before" is the code at ``b41863f`` (the commit before the fixes), in a
worktree with a virtualenv of its own, served by that virtualenv's Python (``--before DIR``):

    git worktree add /tmp/abuse-before b41863f
    (cd /tmp/abuse-before && python3 -m venv .venv && .venv/bin/pip install -e '.[test]')
    python -m bench.abuse --before /tmp/abuse-before [--only render,search,parts,text,event]

The goal, after: ``/me`` p95 ≤ 100 ms and max ≤ 500 ms during every abuse.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import httpx
from tests.fakes.openai_server import free_port

from bench.a2a_bounds import event_load, in_thread, parts_body, parts_load, setup_agents
from bench.common import spawn, stop_all, wait_up
from bench.latency import Latency, probe_times, while_running
from bench.long_chat_search import QUERIES, during, insert_chats
from bench.render_worst import PATTERNS

LOADS = ("render", "search", "parts", "text", "event")
GOAL_P95_MS, GOAL_MAX_MS = 100.0, 500.0
SEARCH_TERM, _ = QUERIES["term past it (咖啡 at 60,000)"]


@dataclass(frozen=True)
class Row:
    name: str
    latency: Latency
    load: str


def text_part_body(mb: int) -> bytes:
    """A ``SendMessage`` of one text part of ``mb`` MB (the probe's 15 MB part)."""
    params = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "a" * (mb * 2**20)}]}}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}).encode()


class Abuses:
    """The abuses against one running app, each returning ``/me``'s latencies meanwhile and what it did."""

    def __init__(self, base: str, db_url: str, args: argparse.Namespace, me: Callable[[], Awaitable[object]],
                 abuser: httpx.AsyncClient, token: str) -> None:
        self.base, self.db_url, self.args, self.me, self.abuser, self.token = base, db_url, args, me, abuser, token

    async def render(self) -> Row:
        text = f"```autohotkey\n{PATTERNS['space-newline'](5_000)}```"

        async def one() -> None:
            (await self.abuser.post("/api/render/markdown", json={"text": text})).raise_for_status()

        loud, renders = await while_running(self.me, one, concurrency=self.args.render_clients,
                                            seconds=self.args.render_seconds, least=5)
        took = Latency(renders.times)
        return Row("1. worst renders", loud, f"{len(took.times)} renders, p50 {took.p50_ms / 1000:.1f} s")

    async def search(self) -> Row:
        user_id = int((await self.abuser.get("/api/auth/me")).json()["id"])
        started = time.perf_counter()
        await insert_chats(self.db_url, user_id, self.args.chats, self.args.chars)
        wrote = time.perf_counter() - started

        async def searches() -> list[float]:
            times: list[float] = []
            for _ in range(self.args.searches):
                started = time.perf_counter()
                r = await self.abuser.get("/api/agent-sessions/search", params={"q": SEARCH_TERM})
                times.append(time.perf_counter() - started)
                r.raise_for_status()
            return times

        loud, times = await during(self.me, searches)
        return Row("4. chat search, long messages", loud,
                   f"{len(times)} searches, p50 {statistics.median(times):.1f} s (chats written in {wrote:.0f} s)")

    async def _a2a(self, name: str, body: bytes) -> Row:
        started = time.perf_counter()
        task = asyncio.ensure_future(in_thread(lambda: parts_load(self.base, self.token, body)))
        loud = await probe_times(self.me, until=task.done, least=5)
        outcome = await task
        return Row(name, loud, f"{time.perf_counter() - started:.1f} s, {outcome[:70]}")

    async def parts(self) -> Row:
        return await self._a2a(f"5. A2A, {self.args.parts:,} parts", parts_body(self.args.parts))

    async def text(self) -> Row:
        return await self._a2a(f"5. A2A, one {self.args.text_mb} MB part", text_part_body(self.args.text_mb))

    async def event(self, admin: httpx.Cookies, csrf: str) -> Row:
        started = time.perf_counter()
        task = asyncio.ensure_future(in_thread(lambda: event_load(self.base, admin, csrf)))
        loud = await probe_times(self.me, until=task.done, least=5)
        outcome = await task
        return Row(f"6. remote agent, {self.args.event_mb} MB event", loud,
                   f"{time.perf_counter() - started:.1f} s, {outcome[:70]}")


async def measure(base: str, db_url: str, fake_url: str, peer_url: str, args: argparse.Namespace) -> list[Row]:
    await wait_up(f"{fake_url}/models")
    await wait_up(f"{peer_url}/.well-known/agent-card.json")
    await wait_up(f"{base}/api/health")
    admin, csrf, token, other = await setup_agents(base, fake_url, peer_url)
    async with httpx.AsyncClient(base_url=base, cookies=other, timeout=600) as me_client, \
            httpx.AsyncClient(base_url=base, cookies=admin, headers={"X-CSRF-Token": csrf}, timeout=600) as abuser:
        async def me() -> None:
            (await me_client.get("/api/auth/me")).raise_for_status()

        abuses = Abuses(base, db_url, args, me, abuser, token)
        rows = [Row("(alone)", await probe_times(me, until=lambda: True, least=args.baseline), "")]
        runs: dict[str, Callable[[], Awaitable[Row]]] = {
            "render": abuses.render, "search": abuses.search, "parts": abuses.parts, "text": abuses.text,
            "event": lambda: abuses.event(admin, csrf)}
        for key in LOADS:
            if key in args.only:
                rows.append(await runs[key]())
                print(f"  {rows[-1].name}: /me p95 {rows[-1].latency.p95_ms:.0f} ms, max "
                      f"{rows[-1].latency.max_ms:.0f} ms; {rows[-1].load}", flush=True)
        return rows


def run_tree(label: str, python: str, src: str | None, args: argparse.Namespace) -> list[Row]:
    """Serve the app of one tree (with ``python``, from ``src``; this tree's when None) beside the fake
    model and the remote agent, and measure every abuse against it."""
    app_port, fake_port, peer_port = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        db_url = f"sqlite+aiosqlite:///{Path(data_dir) / 'agentloft.db'}"
        procs = [spawn("bench.long_chat_search", "--serve", str(app_port), data_dir, src=src, python=python),
                 spawn("bench.a2a_bounds", "--serve-fake", str(fake_port)),
                 spawn("bench.a2a_bounds", "--serve-peer", str(peer_port), "--event-mb", str(args.event_mb))]
        try:
            print(f"{label}:", flush=True)
            return asyncio.run(measure(f"http://127.0.0.1:{app_port}", db_url, f"http://127.0.0.1:{fake_port}/v1",
                                       f"http://127.0.0.1:{peer_port}", args))
        finally:
            stop_all(procs)


def report(results: dict[str, list[Row]]) -> None:
    """One line per abuse: ``/me`` p95 and max on each tree, the ratio to that tree's ``/me`` alone, and
    whether this tree meets the goal."""
    print(f"\n{'abuse':34} {'tree':7} {'/me p50':>9} {'p95':>9} {'max':>10} {'p95 x':>7} {'max x':>7}  "
          "goal  the abuse")
    trees = list(results)
    for i in range(len(results[trees[0]])):
        for tree in trees:
            row, alone = results[tree][i], results[tree][0].latency
            lat = row.latency
            meets = "" if i == 0 or tree != "after" else (
                "yes" if lat.p95_ms <= GOAL_P95_MS and lat.max_ms <= GOAL_MAX_MS else "NO")
            ratios = "" if i == 0 else f"{lat.p95_ms / alone.p95_ms:6.1f}x {lat.max_ms / alone.max_ms:6.1f}x"
            print(f"{row.name:34} {tree:7} {lat.p50_ms:7.1f}ms {lat.p95_ms:7.1f}ms {lat.max_ms:8.1f}ms "
                  f"{ratios:15}  {meets:4}  {row.load}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", help="a worktree of the code before the fixes, with its own .venv")
    parser.add_argument("--only", default=",".join(LOADS), help=f"abuses to run, of {','.join(LOADS)}")
    parser.add_argument("--baseline", type=int, default=200, help="quiet /me requests for the baseline")
    parser.add_argument("--render-clients", type=int, default=2)
    parser.add_argument("--render-seconds", type=float, default=10.0)
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--chars", type=int, default=99_000)
    parser.add_argument("--searches", type=int, default=2)
    parser.add_argument("--parts", type=int, default=400_000)
    parser.add_argument("--text-mb", type=int, default=15)
    parser.add_argument("--event-mb", type=int, default=200)
    args = parser.parse_args()
    args.only = set(args.only.split(","))
    results = {"after": run_tree("after (this tree)", sys.executable, None, args)}
    if args.before:
        before = Path(args.before)
        results = {"before": run_tree(f"before ({before})", str(before / ".venv" / "bin" / "python"),
                                      str(before / "src"), args), **results}
    report(results)


if __name__ == "__main__":
    main()
