"""SQLite write-ahead log under sustained writes with concurrent readers: its largest size, and what the
writers get done, with the checkpoint policy of ``core.db_sqlite`` against the one before it, in
alternating rounds of the same run.

Writers create and update documents through ``documents.service`` as fast as they can (each in its own
transaction, as the API does), so every write also writes the search index and a version. Readers list
documents through the app's sessions. Two workloads:

- ``large``: documents of ``--large-kb`` (about 1 MB of WAL per update), short reads only. The policy
  before looked at the WAL's size every 200 commits, by when it had grown to hundreds of MB.
- ``streaming``: documents of ``--small-kb``, plus a reader that streams a listing in one read
  transaction for ``--stream-s`` at a time, back to back (a slow export or search). The truncation
  before waited 0.5 s for readers and gave up every time: the WAL grew without end.

    python -m bench.wal_growth [--seconds 20] [--rounds 2] [--writers 4] [--readers 4]

Each round starts from a copy of the same freshly migrated database. Printed per workload and policy:
the largest WAL seen (sampled every 5 ms), writes per second and their p95, and the ratios after/before.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import shutil
import sqlite3
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from agentloft.core import db_sqlite, migrate
from agentloft.core.db import Database
from agentloft.core.metadata import import_all_models
from agentloft.documents import service

MAX_CONTENT = service.HARD_MAX_CONTENT_LENGTH


class BeforeFile(db_sqlite.DatabaseFile):
    """The checkpoint policy before the current one (as of commit d00cdde): the WAL's size is looked at
    only at the checkpoint every ``CHECKPOINT_EVERY`` commits, and a truncation waits ``TRUNCATE_WAIT_S``
    for readers once, its outcome unchecked."""

    def committed(self) -> None:
        self._commits += 1
        if self._commits < db_sqlite.CHECKPOINT_EVERY or self._checkpointing:
            return
        self._commits, self._checkpointing = 0, True
        loop = asyncio.get_running_loop()
        if db_sqlite.wal_size(self.path) > db_sqlite.WAL_TRUNCATE_BYTES:
            loop.create_task(self._truncate_once()).add_done_callback(self._checkpointed)
        else:
            loop.run_in_executor(None, db_sqlite.checkpoint, self.path, "PASSIVE").add_done_callback(
                self._checkpointed)

    async def _truncate_once(self) -> None:
        async with self.write_lock():
            await asyncio.get_running_loop().run_in_executor(
                None, db_sqlite.checkpoint, self.path, "TRUNCATE", db_sqlite.TRUNCATE_WAIT_S)


@dataclass
class Workload:
    name: str
    size_kb: int
    stream_s: float


@dataclass
class Outcome:
    largest_wal: int = 0
    write_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return len(self.write_ms) / self.seconds if self.seconds else 0.0

    @property
    def p95(self) -> float:
        return statistics.quantiles(self.write_ms, n=20)[18] if len(self.write_ms) >= 20 else max(self.write_ms)


def _words(rng: random.Random) -> list[str]:
    english = ["".join(rng.choices("etaoinshrdlcumwfgypbvk", k=rng.randint(3, 9))) for _ in range(5000)]
    chinese = ["".join(rng.choices("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会", k=2))
               for _ in range(500)]
    return english + chinese


def _content(rng: random.Random, words: list[str], size_kb: int) -> str:
    out: list[str] = []
    length = 0
    while length < size_kb * 1000:
        word = rng.choice(words)
        out.append(word)
        length += len(word.encode()) + 1
    return " ".join(out)[:MAX_CONTENT]


def _template(directory: Path) -> Path:
    path = directory / "template.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    con = sqlite3.connect(path)
    try:
        con.execute("INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
                    "VALUES (1, 'bench', 'x', 'user', 0, '2026-01-01', '2026-01-01')")
        con.commit()
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the copies are of the main file alone
    finally:
        con.close()
    return path


def _sample(path: str, outcome: Outcome, stop: threading.Event) -> None:
    while not stop.wait(0.005):
        outcome.largest_wal = max(outcome.largest_wal, db_sqlite.wal_size(path))


def _stream(path: str, stream_s: float, stop: threading.Event) -> None:
    """Read the documents' list in one read transaction for ``stream_s``, a chunk at a time, again and
    again, like a client streaming an export."""
    con = sqlite3.connect(path, isolation_level=None)
    try:
        while not stop.is_set():
            ends = time.monotonic() + stream_s
            con.execute("BEGIN")
            cursor = con.execute("SELECT id, length(content) FROM agent_documents")
            while time.monotonic() < ends and not stop.is_set():
                if not cursor.fetchmany(20):
                    cursor.close()
                    cursor = con.execute("SELECT id, length(content) FROM agent_documents")
                stop.wait(0.02)
            cursor.close()  # an unfinished statement would keep reading its snapshot past the COMMIT
            con.execute("COMMIT")
    finally:
        con.close()


def _fresh(template: Path, path: Path, policy: str) -> None:
    """``path`` as a copy of ``template``, with ``policy``'s checkpoints for the connections opened next."""
    for leftover in path.parent.glob(f"{path.name}*"):
        leftover.unlink()
    shutil.copyfile(template, path)
    key = os.path.realpath(path)
    if policy == "before":
        db_sqlite._FILES[key] = BeforeFile(str(path))  # the bench's own baseline, in the module's registry
    else:
        db_sqlite._FILES.pop(key, None)


async def one_round(path: Path, workload: Workload, args: argparse.Namespace) -> Outcome:
    db = Database(f"sqlite+aiosqlite:///{path}")
    rng = random.Random(7)
    words = _words(rng)
    outcome = Outcome()
    stop = threading.Event()
    threads = [threading.Thread(target=_sample, args=(str(path), outcome, stop))]
    if workload.stream_s:
        threads.append(threading.Thread(target=_stream, args=(str(path), workload.stream_s, stop)))
    ends = time.monotonic() + args.seconds

    async def writer() -> None:
        ids: list[str] = []
        while time.monotonic() < ends:
            content = _content(rng, words, workload.size_kb)
            started = time.perf_counter()
            async with db.session() as s:
                if ids and rng.random() < 0.5:
                    await service.update_document(db=s, user_id=1, document_id=rng.choice(ids),
                                                  changes={"content": content}, max_content_length=MAX_CONTENT)
                else:
                    row = await service.create_document(db=s, user_id=1, title="Bench", content=content,
                                                        max_content_length=MAX_CONTENT)
                    ids.append(row.id)
            outcome.write_ms.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0)

    async def reader() -> None:
        while time.monotonic() < ends:
            async with db.session() as s:
                await service.list_documents(db=s, user_id=1, page_size=20)
            await asyncio.sleep(0.005)

    for thread in threads:
        thread.start()
    started = time.monotonic()
    try:
        await asyncio.gather(*(writer() for _ in range(args.writers)), *(reader() for _ in range(args.readers)))
    finally:
        outcome.seconds = time.monotonic() - started
        stop.set()
        for thread in threads:
            thread.join()
        await db.dispose()
    return outcome


def _line(label: str, o: Outcome) -> str:
    return (f"  {label:6}: largest WAL {o.largest_wal / 2**20:7.1f} MB, {o.per_second:6.1f} writes/s, "
            f"write p95 {o.p95:7.1f} ms")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--writers", type=int, default=4)
    parser.add_argument("--readers", type=int, default=4)
    parser.add_argument("--large-kb", type=int, default=100)
    parser.add_argument("--small-kb", type=int, default=20)
    parser.add_argument("--stream-s", type=float, default=1.0)
    args = parser.parse_args()
    import_all_models()
    workloads = [Workload("large", args.large_kb, 0.0), Workload("streaming", args.small_kb, args.stream_s)]
    print(f"WAL limit {db_sqlite.WAL_TRUNCATE_BYTES / 2**20:.0f} MB, {args.writers} writers, "
          f"{args.readers} readers, {args.seconds:.0f} s a round, {args.rounds} rounds per policy")
    with tempfile.TemporaryDirectory() as tmp:
        template = _template(Path(tmp))
        for workload in workloads:
            results: dict[str, list[Outcome]] = {"before": [], "after": []}
            for _ in range(args.rounds):
                for policy in results:
                    path = Path(tmp) / f"{workload.name}-{policy}.db"
                    _fresh(template, path, policy)
                    results[policy].append(await one_round(path, workload, args))
            print(f"{workload.name} ({workload.size_kb} KB documents"
                  + (f", a reader streaming {workload.stream_s:.1f} s at a time" if workload.stream_s else "")
                  + "):")
            for policy, outcomes in results.items():
                for o in outcomes:
                    print(_line(policy, o))
            before, after = results["before"], results["after"]
            wal = max(o.largest_wal for o in after) / max(max(o.largest_wal for o in before), 1)
            rate = statistics.median(o.per_second for o in after) / max(
                statistics.median(o.per_second for o in before), 1e-9)
            print(f"  after/before: largest WAL {wal:.2f}x, writes per second {rate:.2f}x")


if __name__ == "__main__":
    asyncio.run(main())
