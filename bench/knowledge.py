"""Lexical knowledge retrieval: what leaving the most common tokens out of the ranked OR saves.

One collection of N generated chunks (``bench.knowledge_vectors``' generator: ~40 words each over a
5,000-word Zipf vocabulary, so a few words are in nearly every chunk), written straight into a migrated
database; 60 queries of three words drawn the same way, top 10, timed through ``search.lexical_ranking``
after a warm-up. Baseline in the same run: every token in the OR (``prune=False``). Then recall@5 of
both on the labelled set (``bench.knowledge_labels``), English and Chinese, to show what pruning costs in
quality. Run: ``python -m bench.knowledge [--chunks 10000,100000] [--postgres URL]``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

import numpy as np
from sqlalchemy import insert, text
from tests.support import add_user

from agentloft.core.db import utcnow
from agentloft.core.runtime import Runtime
from agentloft.files.models import File
from agentloft.knowledge import search
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile
from agentloft.knowledge.terms import query_tokens, terms
from bench import knowledge_labels
from bench.knowledge_vectors import KB, p95, runtime, texts, vocabulary

TOP_K = 10
T = TypeVar("T")


async def base_rows(rt: Runtime, n: int) -> None:
    await add_user(rt.db)
    async with rt.db.session() as db:
        db.add(KnowledgeCollection(id=KB, user_id=1, name="Bench", description=""))
        db.add(File(id="fl_bench", user_id=1, name="bench.txt", media_type="text/plain", size=1, sha256="0" * 64,
                    status="ready", created_at=utcnow()))
        await db.flush()
        db.add(KnowledgeFile(collection_id=KB, file_id="fl_bench", status="ready", chunks=n))


async def write_chunks(rt: Runtime, chunk_texts: list[str]) -> None:
    for start in range(0, len(chunk_texts), 2000):
        rows = [{"id": start + i + 1, "collection_id": KB, "file_id": "fl_bench", "ord": start + i, "page": None,
                 "text": t, "terms": terms(t)} for i, t in enumerate(chunk_texts[start:start + 2000])]
        async with rt.db.session() as db:
            await db.execute(insert(KnowledgeChunk), rows)
    async with rt.db.session() as db:
        await db.execute(text("ANALYZE knowledge_chunks"))


async def timed(rt: Runtime, queries: list[str], prune: bool) -> list[float]:
    out: list[float] = []
    for q in queries:
        started = time.perf_counter()
        async with rt.db.session() as db:
            await search.lexical_ranking(db, collection_ids=[KB], tokens=query_tokens(q), limit=TOP_K, prune=prune)
        out.append((time.perf_counter() - started) * 1000)
    return out


async def speed(database_url: str, data_dir: Path, n: int, queries_n: int) -> dict[str, list[float]]:
    rt = await runtime(database_url, data_dir)
    try:
        rng = np.random.default_rng(1)
        words = vocabulary(rng)
        await base_rows(rt, n)
        await write_chunks(rt, texts(rng, words, n))
        queries = [" ".join(t.split()[:3]) for t in texts(np.random.default_rng(7), words, queries_n)]
        await timed(rt, queries[:5], True)  # warm-up
        results: dict[str, list[float]] = {}
        for label, prune in (("all tokens (baseline)", False), ("common left out", True)):
            results[label] = await timed(rt, queries, prune)
        return results
    finally:
        await rt.db.dispose()


async def quality(database_url: str, data_dir: Path) -> dict[str, dict[str, float]]:
    rt = await runtime(database_url, data_dir)
    labelled = knowledge_labels.passages()
    try:
        await base_rows(rt, len(labelled))
        await write_chunks(rt, [t for _, t in labelled])
        chunk_of = {pid: i + 1 for i, (pid, _) in enumerate(labelled)}
        out: dict[str, dict[str, float]] = {}
        for language in ("en", "zh"):
            asked = knowledge_labels.questions(language)
            out[language] = {}
            for label, prune in (("all tokens", False), ("common left out", True)):
                hits = 0
                for pid, q in asked:
                    async with rt.db.session() as db:
                        ranked = await search.lexical_ranking(db, collection_ids=[KB], tokens=query_tokens(q),
                                                              limit=5, prune=prune)
                    hits += chunk_of[pid] in [r.chunk_id for r in ranked]
                out[language][label] = hits / len(asked)
        return out
    finally:
        await rt.db.dispose()


def report(label: str, results: dict[str, list[float]]) -> None:
    print(f"  {label}")
    for name, values in results.items():
        print(f"    {name:22} median {statistics.median(values):8.2f} ms   p95 {p95(values):8.2f} ms")
    base, pruned = results["all tokens (baseline)"], results["common left out"]
    print(f"    baseline / pruned: {statistics.median(base) / statistics.median(pruned):.2f}x (median), "
          f"{p95(base) / p95(pruned):.2f}x (p95)")


async def main_async(args: argparse.Namespace) -> None:
    targets = [("SQLite", None)] + ([("PostgreSQL", args.postgres)] if args.postgres else [])
    for db_label, server in targets:
        for n in [int(x) for x in args.chunks.split(",") if x]:
            report(f"{db_label}, {n:,} chunks", await on(server, lambda u, d, n=n: speed(u, d, n, args.queries)))
        for language, by in (await on(server, quality)).items():
            print(f"  {db_label} recall@5 {language}: " + "   ".join(f"{k} {v:.3f}" for k, v in by.items()))


async def on(server: str | None, work: Callable[[str, Path], Awaitable[T]]) -> T:
    """``work(url, data dir)`` on a fresh SQLite file, or a fresh database on the PostgreSQL ``server``."""
    with tempfile.TemporaryDirectory() as tmp:
        if server is None:
            return await work(f"sqlite+aiosqlite:///{Path(tmp) / 'agentloft.db'}", Path(tmp))
        os.environ["AGENTLOFT_TEST_POSTGRES_URL"] = server
        from tests.pg import database as pg

        name = pg.new_name("bench_kl")
        url = pg.create_database(name)
        try:
            return await work(url, Path(tmp))
        finally:
            pg.drop_database(name)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--chunks", default="10000,100000")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (a database is made and dropped)")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
