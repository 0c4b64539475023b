"""What the per-user stored-bytes count and limit (migration 0027, ``core.storage_quota``) add to a document
write: create, update and delete through ``documents.service``, as the API does, on a database at the
revision before (``0026_knowledge_vocab``: no counter, no check) and on one at head with the limit checked, in
alternating rounds so the shared machine's load falls on both alike. Each database starts with
``--existing`` documents of the writing user, each with ``--versions`` versions, so the count's triggers
work on a user who already stores something (the delete subtracts the versions it drops).

    python -m bench.storage_quota [--writes 400] [--existing 2000] [--versions 5]
    python -m bench.storage_quota --postgres postgresql+asyncpg://user:pw@127.0.0.1/postgres

Goal: a write's p95 within 10 % (or 0.2 ms) of the one before.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy import text

from agentloft.core import migrate
from agentloft.core.db import Database
from bench.documents import WriteTimes, alternating, pct, write_times

BEFORE = "0026_knowledge_vocab"
PG_DATABASES = ("agentloft_bench_quota_before", "agentloft_bench_quota_after")
STAMP = "'2026-01-01 00:00:00'"


async def fill(url: str, existing: int, versions: int) -> None:
    """User 1 with ``existing`` documents of about 2 KB, each updated ``versions`` times."""
    db = Database(url)
    try:
        async with db.session() as s:
            await s.execute(text("INSERT INTO users (id, username, password_hash, role, disabled, created_at, "
                                 f"updated_at) VALUES (1, 'u1', 'x', 'user', false, {STAMP}, {STAMP})"))
            await s.execute(text(
                "INSERT INTO agent_documents (id, user_id, type, title, content, summary, created_at, updated_at) "
                f"VALUES (:id, 1, 'memory', 'title', :content, 'summary', {STAMP}, {STAMP})"),
                [{"id": f"ad_q{n}", "content": f"document {n} " + "words and 数据 " * 120} for n in range(existing)])
            for v in range(versions):
                await s.execute(text("UPDATE agent_documents SET content = content || :more"), {"more": f" v{v}"})
    finally:
        await db.dispose()


async def compare(before_url: str, after_url: str, writes: int, rounds: int) -> None:
    """Wall times per write, and this process's CPU per write (on a shared machine the steadier of the
    two; on SQLite it is all the database's work, on PostgreSQL only the client's)."""
    before, after = Database(before_url), Database(after_url)
    cpu = {"before": 0.0, "after": 0.0}

    def timed(label: str, db: Database, limit: int) -> Callable[[], Awaitable[WriteTimes]]:
        async def one_round() -> WriteTimes:
            started = time.process_time()
            got = await write_times(db, writes // rounds, storage_limit=limit)
            cpu[label] += time.process_time() - started
            return got
        return one_round

    try:
        times = await alternating(rounds, {"before": timed("before", before, 0),
                                           "after": timed("after", after, 2**40)})
        print(f"{'write':<8} {'before p50':>11} {'p95':>7} {'after p50':>10} {'p95':>7} {'p95 ratio':>10}")
        for name in ("create", "update", "delete"):
            b, a = getattr(times["before"], name), getattr(times["after"], name)
            print(f"{name:<8} {pct(b, 50):>9.2f}ms {pct(b, 95):>5.2f}ms {pct(a, 50):>8.2f}ms {pct(a, 95):>5.2f}ms "
                  f"{pct(a, 95) / pct(b, 95):>9.2f}x")
        per_write = {label: used / (3 * (writes // rounds) * rounds) * 1000 for label, used in cpu.items()}
        print(f"CPU per write (create, update, delete alike): before {per_write['before']:.2f} ms, after "
              f"{per_write['after']:.2f} ms, ratio {per_write['after'] / per_write['before']:.2f}x")
        async with after.read_session() as s:
            counted = (await s.execute(text("SELECT bytes FROM user_storage WHERE user_id = 1"))).scalar_one()
        print(f"user 1 stores {counted / 2**20:.1f} MiB (the counter, after the rounds)")
    finally:
        await before.dispose()
        await after.dispose()


async def _pg(admin: str, *statements: str) -> None:
    import asyncpg
    from sqlalchemy.engine import make_url

    u = make_url(admin)
    conn = await asyncpg.connect(user=u.username, password=u.password, host=u.host, port=u.port,
                                 database=u.database or "postgres")
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


def run(urls: tuple[str, str], args: argparse.Namespace) -> None:
    for url, revision in zip(urls, (BEFORE, "head"), strict=True):
        migrate.upgrade(url, BEFORE)
        asyncio.run(fill(url, args.existing, args.versions))
        if revision == "head":  # the counter is made from what is stored, as on an existing install
            migrate.upgrade(url)
    asyncio.run(compare(*urls, writes=args.writes, rounds=args.rounds))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--writes", type=int, default=400, help="documents created, updated, deleted per state")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--existing", type=int, default=2000)
    ap.add_argument("--versions", type=int, default=5)
    ap.add_argument("--postgres", help="an admin URL of a PostgreSQL server (role with CREATEDB)")
    args = ap.parse_args()
    if args.postgres:
        from sqlalchemy.engine import make_url

        drops = [f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' for name in PG_DATABASES]
        asyncio.run(_pg(args.postgres, *drops, *(f'CREATE DATABASE "{name}"' for name in PG_DATABASES)))
        base = make_url(args.postgres).set(drivername="postgresql+asyncpg")
        try:
            run((base.set(database=PG_DATABASES[0]).render_as_string(hide_password=False),
                 base.set(database=PG_DATABASES[1]).render_as_string(hide_password=False)), args)
        finally:
            asyncio.run(_pg(args.postgres, *drops))
        return
    with tempfile.TemporaryDirectory() as tmp:
        run((f"sqlite+aiosqlite:///{Path(tmp) / 'before.db'}", f"sqlite+aiosqlite:///{Path(tmp) / 'after.db'}"),
            args)


if __name__ == "__main__":
    main()
