"""A chat search over long messages: how long one search takes, and how slow another user's
``GET /api/auth/me`` gets while searches run, against the same request with nothing else going on, in
the same run.

One user owns 100 chats of one 99,000-character message each (Chinese text with full-width letters and
"……", which NFKC folding makes longer), a term near the start of every message ("烘焙", at character
1,000: inside the head a snippet looks at) and one far in ("咖啡", at 60,000: past it). The app runs in its
own process on SQLite; this process writes the chats into its database (through
the index triggers) and then asks the search page by page, one search after another, while a second user
asks ``/me`` one request after another and times each. ``--before PATH`` serves, after the code of this
tree, a second app from the ``src`` directory at ``PATH`` (e.g. ``git archive main src | tar -x -C
/tmp/before``), with everything else equal.

    python -m bench.long_chat_search [--chats 100] [--chars 99000] [--searches 3] [--baseline 200]
                                     [--before /tmp/before/src]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import insert
from tests.fakes.openai_server import free_port

from bench.common import serve_app, spawn, stop_all, wait_up
from bench.latency import Latency, probe_times

PASSWORD = "password123"
FILLER = "前言写了很多别的事情……ＡＢＣ１２３，今天的天气不错我们聊聊别的话题。"
QUERIES = {"term in the head (烘焙 at 1,000)": ("烘焙", 1_000), "term past it (咖啡 at 60,000)": ("咖啡", 60_000)}
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _content(chars: int) -> str:
    text = (FILLER * (chars // len(FILLER) + 1))[:chars]
    for term, at in QUERIES.values():
        text = text[:at] + term + text[at + len(term):]
    return text


async def insert_chats(url: str, user_id: int, chats: int, chars: int) -> None:
    """The user's chats, written as the app writes them (the index triggers fold and gram them)."""
    from agentloft.chat.models import AgentMessage, AgentSession
    from agentloft.core.db import Database

    db = Database(url)
    content = _content(chars)
    try:
        for i in range(chats):
            stamp = T0 + timedelta(minutes=i)
            sid = f"as_long{i:05d}"
            async with db.session() as s:
                await s.execute(insert(AgentSession.__table__), [{
                    "id": sid, "user_id": user_id, "agent_id": None, "kind": "llm", "title": f"长文 {i}",
                    "status": "idle", "model_history": None, "deleted_at": None, "created_at": stamp,
                    "updated_at": stamp}])
                await s.execute(insert(AgentMessage.__table__), [{
                    "id": f"am_long{i:05d}", "session_id": sid, "role": "user", "content": content,
                    "parts": [{"type": "text", "text": content}], "model_id": None, "input_tokens": None,
                    "output_tokens": None, "status": "complete", "error": None, "sort_order": 0, "source": "user",
                    "a2a_task_id": None, "caller_agent_id": None, "caller_session_id": None, "created_at": stamp,
                    "updated_at": stamp}])
    finally:
        await db.dispose()


async def _signed_in(base: str, username: str, admin: httpx.AsyncClient | None) -> httpx.AsyncClient:
    """A client signed in as a new account: the first (an admin) signs up, the others are made by it."""
    client = httpx.AsyncClient(base_url=base, timeout=600)
    await client.get("/api/health")
    if admin is None:
        r = await client.post("/api/auth/signup", json={"username": username, "password": PASSWORD},
                              headers={"X-CSRF-Token": client.cookies.get("agentloft_csrf") or ""})
    else:
        csrf = {"X-CSRF-Token": admin.cookies.get("agentloft_csrf") or ""}
        r = await admin.post("/api/admin/users", json={"username": username, "password": PASSWORD}, headers=csrf)
        r.raise_for_status()
        r = await client.post("/api/auth/login", json={"username": username, "password": PASSWORD},
                              headers={"X-CSRF-Token": client.cookies.get("agentloft_csrf") or ""})
    r.raise_for_status()
    return client


async def during(probe: Callable[[], Awaitable[object]], work: Callable[[], Awaitable[list[float]]]
                  ) -> tuple[Latency, list[float]]:
    """``probe``'s latencies while ``work()`` runs once, and what it returned."""
    task = asyncio.create_task(work())
    latency = await probe_times(probe, until=task.done)
    return latency, await task


async def _measure(base: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    await wait_up(f"{base}/api/health")
    admin = await _signed_in(base, "admin", None)
    searcher = await _signed_in(base, "searcher", admin)
    other = await _signed_in(base, "other", admin)
    try:
        me = (await searcher.get("/api/auth/me")).json()
        started = time.perf_counter()
        await insert_chats(url, int(me["id"]), args.chats, args.chars)
        print(f"  wrote {args.chats} chats of {args.chars:,} characters in {time.perf_counter() - started:.1f} s",
              flush=True)
        async def me() -> None:
            (await other.get("/api/auth/me")).raise_for_status()

        idle = await probe_times(me, until=lambda: True, least=args.baseline)
        out: dict[str, Any] = {"idle": idle}
        for name, (term, _) in QUERIES.items():
            async def searches(term: str = term) -> list[float]:
                times: list[float] = []
                for _ in range(args.searches):
                    started = time.perf_counter()
                    r = await searcher.get("/api/agent-sessions/search", params={"q": term})
                    times.append(time.perf_counter() - started)
                    r.raise_for_status()
                    page = r.json()
                    assert page["total"] == args.chats and all(
                        any(p["hit"] for p in item["match"]["parts"]) for item in page["items"]), page
                return times

            out[name] = await during(me, searches)
        return out
    finally:
        for client in (admin, searcher, other):
            await client.aclose()


def _report(name: str, result: dict[str, Any]) -> None:
    """The searches' times, and ``/me`` meanwhile against ``/me`` alone: its max too, since a search that
    holds the loop for seconds stalls only the few requests that arrive meanwhile, which p95 hides."""
    idle: Latency = result["idle"]
    print(f"{name}:")
    print(idle.line("/me alone"))
    for query in QUERIES:
        me, searches = result[query]
        print(f"  {query}: search p50 {statistics.median(searches) * 1000:.0f} ms (max "
              f"{max(searches) * 1000:.0f}, {len(searches)} searches)")
        print(me.line("/me meanwhile", idle), flush=True)


def _run(name: str, args: argparse.Namespace, src: str | None) -> None:
    port = free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        url = f"sqlite+aiosqlite:///{Path(data_dir) / 'agentloft.db'}"  # the app's own file in data_dir
        proc = spawn("bench.long_chat_search", "--serve", str(port), data_dir, src=src)
        try:
            _report(name, asyncio.run(_measure(f"http://127.0.0.1:{port}", url, args)))
        finally:
            stop_all([proc])


def _serve(port: int, data_dir: str) -> None:
    import agentloft

    print(f"  serving agentloft from {Path(agentloft.__file__).parent}", flush=True)
    serve_app(port, data_dir)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chats", type=int, default=100)
    parser.add_argument("--chars", type=int, default=99_000, help="characters of each chat's one message")
    parser.add_argument("--searches", type=int, default=3, help="searches per query, one after another")
    parser.add_argument("--baseline", type=int, default=200, help="quiet /me requests for the baseline")
    parser.add_argument("--before", help="the src directory of the code to compare with, served second")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        _serve(int(args.serve[0]), args.serve[1])
        return
    _run("this tree", args, None)
    if args.before:
        _run(f"before ({args.before})", args, args.before)


if __name__ == "__main__":
    main()
