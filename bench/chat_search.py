"""Chat search benchmark: finding one's own sessions by title and message text, against LIKE in the same
run.

One user with 2,000 sessions of 20 messages (40,000 messages) among 200,000 messages in all, text from
the documents benchmark's generator (60% English-like, 40% Chinese), in a database made by the real
migrations (so the indexes and triggers are the app's; the rows go in through them). Each search is a
whole call of ``chat.search.search_sessions`` (one page of 20 sessions with snippets, and the exact
total). The baseline is the query a chat app without an index runs: the user's sessions whose title or
any message contains every term (``ILIKE '%term%'``), newest first, with its count.

    python -m bench.chat_search [--sessions 2000] [--per 20] [--total 200000] [--runs 20]
    python -m bench.chat_search --postgres postgresql+asyncpg://user:pw@127.0.0.1/postgres
    python -m bench.chat_search --against /tmp/before/src   # interleaved with another tree's chat search
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import ModuleType
from typing import Any

from sqlalchemy import exists, func, insert, or_, select, text

from agentloft.auth.models import User
from agentloft.chat import search
from agentloft.chat.models import AgentMessage, AgentSession
from agentloft.core import migrate
from agentloft.core.db import Database
from bench import documents as corpus

PG_DATABASE = "agentloft_bench_chat"
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _sessions(n_mine: int, per: int, total: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Sessions and messages: the big user's ``n_mine`` sessions, the rest spread over 99 others."""
    docs = corpus._rows(total // per * 2, 1, random.Random(corpus.SEED))
    sessions: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    n_sessions = total // per
    for i in range(n_sessions):
        owner = 1 if i < n_mine else 2 + i % 99
        stamp = T0 + timedelta(minutes=i)
        sid = f"as_b{i:07d}"
        title_doc = next(docs)
        sessions.append({"id": sid, "user_id": owner, "agent_id": None, "kind": "llm", "title": title_doc[3],
                         "status": "idle", "model_history": None, "deleted_at": None, "created_at": stamp,
                         "updated_at": stamp})
        text_doc = next(docs)
        words = text_doc[4].replace("，", " ").split()
        for j in range(per):
            content = " ".join(words[(j * 5) % len(words):(j * 5) % len(words) + 8]) or text_doc[3]
            messages.append({
                "id": f"am_b{i:07d}_{j:02d}", "session_id": sid, "role": "user" if j % 2 == 0 else "assistant",
                "content": content, "parts": [{"type": "text", "text": content}], "model_id": None,
                "input_tokens": None, "output_tokens": None, "status": "complete", "error": None, "sort_order": j,
                "source": "user", "a2a_task_id": None, "caller_agent_id": None, "caller_session_id": None,
                "created_at": stamp + timedelta(seconds=j), "updated_at": stamp + timedelta(seconds=j)})
    return sessions, messages


async def build(db: Database, n_mine: int, per: int, total: int) -> None:
    sessions, messages = _sessions(n_mine, per, total)
    started = time.perf_counter()
    async with db.session() as s:
        await s.execute(insert(User.__table__), [
            {"id": u, "username": f"bench{u}", "password_hash": "x", "role": "user", "disabled": False,
             "created_at": T0, "updated_at": T0} for u in range(1, 101)])
        await s.execute(insert(AgentSession.__table__), sessions)
        for i in range(0, len(messages), 5000):
            await s.execute(insert(AgentMessage.__table__), messages[i:i + 5000])
    async with db.session() as s:
        await s.execute(text("ANALYZE"))
    print(f"loaded {len(sessions)} sessions, {len(messages)} messages through the index triggers/indexes in "
          f"{time.perf_counter() - started:.1f} s")


async def _search(db: Database, q: str) -> int:
    async with db.session() as s:
        hits = await search.search_sessions(db=s, user_id=1, q=q, offset=0, limit=20)
        return hits.total if hits else 0


async def _like(db: Database, q: str) -> int:
    """The user's sessions holding every term in the title or a message, newest first, and the count."""
    s_, m = AgentSession, AgentMessage
    stmt = select(s_.id).where(s_.user_id == 1, s_.deleted_at.is_(None))
    for term in q.split():
        in_messages = exists().where(m.session_id == s_.id, m.content.ilike(f"%{term}%"))
        stmt = stmt.where(or_(s_.title.ilike(f"%{term}%"), in_messages))
    async with db.session() as s:
        total = (await s.execute(select(func.count()).select_from(stmt.subquery()))).scalar_one()
        await s.execute(stmt.order_by(s_.updated_at.desc()).limit(20))
        return int(total)


def query_classes() -> dict[str, list[str]]:
    en, zh, chars = corpus.bench_terms["english"], corpus.bench_terms["chinese"], corpus.bench_terms["chars"]
    return {
        "zh 2 chars, common word": [zh[i] for i in range(5, 10)],
        "zh 2 chars, rare word": [zh[i] for i in range(2000, 2005)],
        "zh 1 char, common": chars[:5],
        "zh 3 chars": [(zh[i] + zh[i + 1])[:3] for i in range(30, 35)],
        "en mid word": [en[i] for i in range(300, 305)],
        "en common word": [en[i] for i in range(20, 25)],
        "en 2 letters": [en[i][:2] for i in range(40, 45)],
        "zh 2 chars + en word": [f"{zh[5 + i]} {en[300 + i]}" for i in range(5)],
    }


def _module(name: str, path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def other_search(src: Path) -> ModuleType:
    """``chat.search`` of another tree with that tree's ``core.textsearch`` (the rest, models and
    database, is this tree's: the schema must be the same)."""
    textsearch = _module("other_textsearch", src / "agentloft" / "core" / "textsearch.py")
    module = _module("other_chat_search", src / "agentloft" / "chat" / "search.py")
    module.textsearch = textsearch
    return module


async def compare(db: Database, other: ModuleType, runs: int) -> None:
    """Each query class's searches, this tree's and the other's one after the other (in turns, so that
    the machine's load falls on both alike)."""
    print(f"{'query (interleaved)':34} {'before p50':>10} {'p95':>8} {'after p50':>10} {'p95':>8}")
    for name, terms in query_classes().items():
        times: dict[str, list[float]] = {"before": [], "after": []}
        for r in range(runs):
            pair = [("after", search), ("before", other)]
            for label, module in pair if r % 2 else pair[::-1]:
                for q in terms:
                    started = time.perf_counter()
                    async with db.session() as s:
                        await module.search_sessions(db=s, user_id=1, q=q, offset=0, limit=20)
                    times[label].append((time.perf_counter() - started) * 1000)
        b, a = times["before"], times["after"]
        print(f"{name:34} {statistics.median(b):10.2f} {corpus.pct(b, 95):8.2f} {statistics.median(a):10.2f} "
              f"{corpus.pct(a, 95):8.2f}", flush=True)


async def run(url: str, runs: int, fresh: bool, args: argparse.Namespace) -> None:
    db = Database(url)
    try:
        if fresh:
            await build(db, args.sessions, args.per, args.total)
        if args.against:
            await compare(db, other_search(args.against), runs)
            return
        print(f"{'query (user with 2,000 sessions)':34} {'p50 ms':>8} {'p95 ms':>8} {'LIKE p50':>9} "
              f"{'LIKE p95':>9} {'sessions':>9}")
        for name, terms in query_classes().items():
            for q in terms:  # the index finds exactly what LIKE finds
                assert await _search(db, q) == await _like(db, q), (name, q)
            fns: list[Callable[[], Awaitable[int]]] = [lambda q=q: _search(db, q) for q in terms]
            t, hits = await corpus.measure(fns, runs)
            base: list[Callable[[], Awaitable[int]]] = [lambda q=q: _like(db, q) for q in terms]
            b, _ = await corpus.measure(base, max(runs // 4, 5))
            print(f"{name:34} {corpus.pct(t, 50):8.2f} {corpus.pct(t, 95):8.2f} {corpus.pct(b, 50):9.2f} "
                  f"{corpus.pct(b, 95):9.2f} {hits:9.0f}", flush=True)
    finally:
        await db.dispose()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=2000, help="sessions of the big user")
    ap.add_argument("--per", type=int, default=20, help="messages per session")
    ap.add_argument("--total", type=int, default=200_000, help="messages in all")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--postgres", help="an admin URL of a PostgreSQL server: benchmark there instead")
    ap.add_argument("--db", type=Path, help="keep the SQLite file here and reuse it when it exists")
    ap.add_argument("--against", type=Path, help="a src directory: time its chat search and this one's in turns")
    args = ap.parse_args()
    corpus.load_terms()
    if args.postgres:
        admin = args.postgres.replace("+asyncpg", "")
        asyncio.run(corpus._pg_admin(admin, f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)',
                                     f'CREATE DATABASE "{PG_DATABASE}"'))
        url = corpus.pg_url(args.postgres).replace(corpus.PG_DATABASE, PG_DATABASE)
        try:
            migrate.upgrade(url)
            asyncio.run(run(url, args.runs, True, args))
        finally:
            asyncio.run(corpus._pg_admin(admin, f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)'))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "chat.db"
        fresh = not path.exists()
        url = f"sqlite+aiosqlite:///{path}"
        migrate.upgrade(url)
        asyncio.run(run(url, args.runs, fresh, args))


if __name__ == "__main__":
    main()
