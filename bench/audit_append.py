"""What appending one audit event costs a write transaction (issue 33): the same small write (one row into
``app_settings``) committed N times alone, then N times with an ``audit.service.record`` in the same
transaction, on a migrated SQLite file (or ``--url`` for PostgreSQL). Prints the wall time per transaction
of each and their ratio, both measured in this run.

    python -m bench.audit_append [--n 500] [--url postgresql+asyncpg://...]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from agentloft.audit import service as audit_service
from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.system.models import AppSetting


async def _writes(db: Database, n: int, *, audited: bool, tag: str) -> float:
    started = time.perf_counter()
    for i in range(n):
        async with db.session() as s:
            s.add(AppSetting(key=f"bench_{tag}_{i}", value=i))
            await s.flush()
            if audited:
                await audit_service.record(db=s, type="admin.change", actor=audit_service.Actor(1, "bench"),
                                           target="bench", detail={"i": i, "changes": [{"table": "x"}]})
    return (time.perf_counter() - started) / n * 1000


async def main(n: int, url: str | None) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        url = url or f"sqlite+aiosqlite:///{Path(tmp) / 'bench.db'}"
        migrate.upgrade(url)
        db = Database(url)
        try:
            await _writes(db, 50, audited=True, tag="warm")
            plain = await _writes(db, n, audited=False, tag="plain")
            audited = await _writes(db, n, audited=True, tag="audited")
        finally:
            await db.dispose()
    print(f"{db.dialect}: plain write {plain:.3f} ms, with an audit event {audited:.3f} ms, "
          f"+{audited - plain:.3f} ms ({audited / plain:.2f}x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--url", default=None)
    args = parser.parse_args()
    asyncio.run(main(args.n, args.url))
