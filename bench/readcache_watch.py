"""Read-cache write detection benchmark: what watching every statement costs a chat turn's statements.

The read cache (``core.readcache``) notes which groups each statement wrote, from the executed construct
and SQLite's change count read before and after it. This measures that per statement: the same mix a
chat turn runs (a point read on the loop, a Core insert of two rows, a conditional update with RETURNING,
each in its own transaction) on a temporary SQLite file through the app's ``Database``, once with the
cache's listeners attached and once without (the baseline), interleaved in rounds so load drifts hit
both alike. Prints the median CPU time per turn of each and their ratio.

    python -m bench.readcache_watch [--rounds 7] [--turns 400]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from sqlalchemy import Column, Integer, MetaData, Table, Text, insert, select, text, update

from agentloft.core.db import Database

_META = MetaData()
AGENTS = Table("agents", _META, Column("id", Integer, primary_key=True), Column("name", Text))
MESSAGES = Table("agent_messages", _META, Column("id", Integer, primary_key=True), Column("body", Text),
                 Column("status", Text))
SCHEMA = ("CREATE TABLE agents (id INTEGER PRIMARY KEY, name TEXT)",
          "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY, body TEXT, status TEXT)",
          "INSERT INTO agents (id, name) VALUES (1, 'first')")


async def _database(path: Path, watched: bool) -> Database:
    db = Database(f"sqlite+aiosqlite:///{path}")
    if not watched:  # the baseline: the same engine without the cache's statement listeners
        from sqlalchemy import event

        for name, fn in (("before_cursor_execute", db.cache._before_execute),
                         ("after_cursor_execute", db.cache._after_execute), ("checkin", db.cache._checkin)):
            event.remove(db.engine.sync_engine, name, fn)
    async with db.session() as s:
        for statement in SCHEMA:
            await s.execute(text(statement))
    return db


async def _turns(db: Database, count: int) -> float:
    """CPU seconds of this process (all its threads) per chat-turn-like pair of transactions: on a shared
    machine the CPU a turn takes moves far less than its wall time."""
    start = time.process_time()
    for i in range(count):
        async with db.read_session() as s:
            await s.execute(select(AGENTS.c.name).where(AGENTS.c.id == 1))
            await s.execute(insert(MESSAGES), [{"body": f"q{i}", "status": "done"},
                                               {"body": "", "status": "streaming"}])
        async with db.session() as s:
            await s.execute(update(MESSAGES).where(MESSAGES.c.status == "streaming")
                            .values(status="done", body="answer").returning(MESSAGES.c.id))
    return (time.process_time() - start) / count


async def main(rounds: int, turns: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        watched = await _database(Path(tmp) / "watched.db", watched=True)
        plain = await _database(Path(tmp) / "plain.db", watched=False)
        await _turns(watched, 50)
        await _turns(plain, 50)
        with_cache, baseline = [], []
        for _ in range(rounds):
            baseline.append(await _turns(plain, turns))
            with_cache.append(await _turns(watched, turns))
        await watched.dispose()
        await plain.dispose()
    b, w = statistics.median(baseline), statistics.median(with_cache)
    print(f"baseline (no listeners): {b * 1e6:.0f} us CPU per turn")
    print(f"with write detection:    {w * 1e6:.0f} us CPU per turn")
    per_round = ", ".join(f"{x / y:.3f}" for x, y in zip(with_cache, baseline, strict=True))
    print(f"ratio: {w / b:.3f}  (rounds: {per_round})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--turns", type=int, default=400)
    args = parser.parse_args()
    asyncio.run(main(args.rounds, args.turns))
