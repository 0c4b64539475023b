"""Knowledge retrieval: hybrid top-10 latency at N chunks on SQLite and PostgreSQL, each half against its
baseline in the same run, and recall@5 on the labelled set.

One collection of N chunks (generated text over a 5,000-word vocabulary, Zipf-distributed, ~40 words
each, so a few words are in most chunks) with a random unit vector of 256 values per chunk (the fake
embedding model's length) is written straight into a migrated database; the fake OpenAI-compatible server
runs in its own process and embeds every query over HTTP, as a real embedding server would. 60 queries of
three words drawn the same way; per query, after a warm-up, in the same process:

- **lexical, SQL** (baseline): ``search.lexical_ranking``, the ranking in the database (FTS5 ``bm25`` /
  ``ts_rank`` × IDF, common tokens left out), top 10;
- **lexical, in memory**: ``search.lexical``, the freshness read and the postings kept in
  ``knowledge.cache`` (``knowledge.postings``), top 10; its first search (loading the postings) apart;
- **query embedding**: the fake server's answer over HTTP, which every vector search includes;
- **vector, scanned** (baseline, ``--scan``): the query embedded, the collection's vectors read from the
  database and multiplied (``vectors.scan_top``), top 40;
- **vector, cached**: the query embedded, ``vectors.nearest`` over the matrix kept in memory, top 40;
- **hybrid, SQL lexical** (baseline): ``knowledge.service.search_collections`` as
  ``GET /api/knowledge/{id}/search`` answers, with the lexical half left to SQL;
- **hybrid top-10**: the same call as the product makes it (both halves from memory, fused, the chunks
  read).

Quality (``--no-quality`` skips it): recall@5 of SQL lexical, in-memory lexical, vector and hybrid on
``bench.knowledge_labels`` (English and Chinese questions over 280 passages, one chunk each), vectors
from the fake embedding model over HTTP.

    python -m bench.knowledge [--chunks 10000,100000] [--queries 60] [--postgres URL] [--no-sqlite]
                              [--scan] [--no-quality]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert, text
from tests.fakes.openai_server import free_port
from tests.support import add_user

from agentloft.app import build_runtime
from agentloft.core import migrate
from agentloft.core.db import utcnow
from agentloft.core.runtime import Runtime
from agentloft.core.settings import load_settings
from agentloft.files.models import File
from agentloft.knowledge import embedding, search, vectors
from agentloft.knowledge import service as knowledge_service
from agentloft.knowledge.cache import cache_of, stamps
from agentloft.knowledge.fusion import Ranked
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile, KnowledgeVector
from agentloft.knowledge.terms import query_tokens, terms
from agentloft.llm import service as llm_service
from agentloft.llm.models import ModelConfig
from agentloft.system.models import AppSetting
from bench import knowledge_labels
from bench.common import spawn, stop_all, wait_up

DIM = 256
VOCAB = 5000
WORDS_PER_CHUNK = 40
TOP_K = 10
DEPTH = TOP_K * search.FUSION_DEPTH  # what hybrid search asks of each ranking
GOAL_MS = 50.0  # issue 31: hybrid top-10 p95
KB = "kb_bench"


def serve_fake(port: int) -> None:
    """The fake OpenAI-compatible server (embeddings included) on ``port``, in this process (blocks)."""
    import uvicorn
    from tests.fakes.openai_server import FakeModel, build_app

    uvicorn.run(build_app(FakeModel()), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def vocabulary(rng: np.random.Generator) -> list[str]:
    letters = list("abcdefghijklmnopqrstuvwxyz")
    words: set[str] = set()
    while len(words) < VOCAB:
        words.add("".join(rng.choice(letters, size=int(rng.integers(3, 10)))))
    return sorted(words)


def texts(rng: np.random.Generator, words: list[str], count: int) -> list[str]:
    """``count`` texts of ``WORDS_PER_CHUNK`` words each, drawn by Zipf's law (a few words very common)."""
    ranks = np.minimum(rng.zipf(1.2, size=(count, WORDS_PER_CHUNK)), VOCAB) - 1
    return [" ".join(words[i] for i in row) for row in ranks]


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


async def runtime(database_url: str, data_dir: Path) -> Runtime:
    migrate.upgrade(database_url)
    return build_runtime(load_settings(data_dir=data_dir, env="test", secret_key="bench-secret",
                                       database_url=database_url, create_defaults=False))


async def base_rows(rt: Runtime, fake_url: str, n: int) -> None:
    """A user, an embedding model at the fake server, one collection with one file of ``n`` chunks."""
    await add_user(rt.db)
    async with rt.db.session() as db:
        db.add(ModelConfig(id=1, name="Fake embeddings", kind="embedding", provider="openai",
                           base_url=f"{fake_url}/v1", model="fake-embed", enabled=True, is_default=False))
        db.add(KnowledgeCollection(id=KB, user_id=1, name="Bench", description=""))
        db.add(File(id="fl_bench", user_id=1, name="bench.txt", media_type="text/plain", size=1, sha256="0" * 64,
                    status="ready", created_at=utcnow()))
        await db.flush()
        db.add(KnowledgeFile(collection_id=KB, file_id="fl_bench", status="ready", chunks=n))


async def populate(rt: Runtime, n: int, fake_url: str, rng: np.random.Generator, words: list[str]) -> None:
    """``base_rows`` and ``n`` generated chunks, each with a random unit vector."""
    await base_rows(rt, fake_url, n)
    batch = 2000
    for start in range(0, n, batch):
        chunk_texts = texts(rng, words, min(batch, n - start))
        rows = [{"id": start + i + 1, "collection_id": KB, "file_id": "fl_bench", "ord": start + i, "page": None,
                 "text": t, "terms": terms(t)} for i, t in enumerate(chunk_texts)]
        values = vectors.normalised(rng.standard_normal((len(rows), DIM)).tolist())
        async with rt.db.session() as db:
            await db.execute(insert(KnowledgeChunk), rows)
            await db.execute(insert(KnowledgeVector), [
                {"chunk_id": r["id"], "collection_id": KB, "model_id": 1, "dim": DIM,
                 "vector": vectors.to_blob(values[i])} for i, r in enumerate(rows)])
    async with rt.db.session() as db:  # PostgreSQL's statistics, which the SQL ranking's pruning reads
        if db.get_bind().dialect.name == "postgresql":
            await db.execute(text("ANALYZE knowledge_chunks"))


async def choose_model(rt: Runtime, model_id: int | None) -> None:
    async with rt.db.session() as db:
        row = await db.get(AppSetting, "embedding_model_id")
        if row is None:
            db.add(AppSetting(key="embedding_model_id", value=model_id))
        else:
            row.value = model_id


@asynccontextmanager
async def sql_lexical() -> AsyncIterator[None]:
    """The product's search with its lexical half left to SQL (the hybrid baseline)."""
    kept = search.cached_lexical

    async def none(*_args: Any, **_kwargs: Any) -> list[Ranked] | None:
        return None

    search.cached_lexical = none  # type: ignore[assignment]
    try:
        yield
    finally:
        search.cached_lexical = kept


async def timed(queries: list[str], run: Callable[[str], Awaitable[Any]], warm: bool = True) -> list[float]:
    """Milliseconds per query, after one warm-up query."""
    if warm:
        await run(queries[0])
    out: list[float] = []
    for q in queries:
        started = time.perf_counter()
        await run(q)
        out.append((time.perf_counter() - started) * 1000)
    return out


async def embed_query(rt: Runtime, q: str) -> np.ndarray:
    async with rt.db.session() as db:
        model = await db.get(ModelConfig, 1)
        assert model is not None
    raw = await rt.models.embed(llm_service.spec_of(row=model, box=rt.box), [q])
    return vectors.normalised(raw)[0]


async def measure(database_url: str, data_dir: Path, n: int, args: argparse.Namespace,
                  fake_url: str) -> dict[str, list[float]]:
    rt = await runtime(database_url, data_dir)
    rng = np.random.default_rng(31)
    words = vocabulary(rng)
    try:
        await populate(rt, n, fake_url, rng, words)
        queries = [" ".join(t.split()[:3]) for t in texts(np.random.default_rng(7), words, args.queries)]
        cache = cache_of(rt)

        async def sql(q: str) -> Any:
            async with rt.db.session() as db:
                return await search.lexical_ranking(db, collection_ids=[KB], tokens=query_tokens(q), limit=TOP_K)

        async def memory(q: str) -> Any:
            async with rt.db.session() as db:
                return await search.lexical(cache, db, stamps=await stamps(db, [KB]), tokens=query_tokens(q),
                                            limit=TOP_K)

        async def scanned(q: str) -> Any:
            query = await embed_query(rt, q)
            async with rt.db.session() as db:
                return await vectors.scan_top(db, KB, 1, query, DEPTH)

        async def cached(q: str) -> Any:
            query = await embed_query(rt, q)
            async with rt.db.session() as db:
                return await vectors.nearest(cache, db, stamps=await stamps(db, [KB]), model_id=1, query=query,
                                             limit=DEPTH)

        async def hybrid(q: str) -> Any:
            found = await knowledge_service.search_collections(rt=rt, collection_ids=[KB], q=q, top_k=TOP_K)
            assert found.mode == "hybrid" and len(found.items) == TOP_K

        results = {"lexical, SQL": await timed(queries, sql)}
        results["first search, loading"] = await timed(queries[:1], memory, warm=False)
        results["lexical, in memory"] = await timed(queries, memory)
        await choose_model(rt, 1)
        results["query embedding"] = await timed(queries, lambda q: embed_query(rt, q))
        if args.scan:
            results["vector, scanned"] = await timed(queries[: max(5, args.queries // 6)], scanned)
        results["vector, cached"] = await timed(queries, cached)
        async with sql_lexical():
            results["hybrid, SQL lexical"] = await timed(queries, hybrid)
        results["hybrid top-10"] = await timed(queries, hybrid)
        print(f"    cache: {cache.nbytes / 1e6:.1f} MB for {n:,} chunks (postings and vectors), "
              f"loaded {cache.loads} time(s)")
        return results
    finally:
        await rt.models.aclose()
        await rt.db.dispose()


async def quality(database_url: str, data_dir: Path, fake_url: str) -> dict[str, dict[str, float]]:
    """Recall@5 per language and method on the labelled set (module doc)."""
    rt = await runtime(database_url, data_dir)
    labelled = knowledge_labels.passages()
    try:
        await base_rows(rt, fake_url, len(labelled))
        rows = [{"id": i + 1, "collection_id": KB, "file_id": "fl_bench", "ord": i, "page": None, "text": t,
                 "terms": terms(t)} for i, (_, t) in enumerate(labelled)]
        chunk_of = {pid: i + 1 for i, (pid, _) in enumerate(labelled)}
        async with rt.db.session() as db:
            await db.execute(insert(KnowledgeChunk), rows)
            model = await db.get(ModelConfig, 1)
            assert model is not None
        raw = await rt.models.embed(llm_service.spec_of(row=model, box=rt.box), [t for _, t in labelled])
        async with rt.db.session() as db:
            await vectors.store(db, collection_id=KB, model_id=1, chunk_ids=[r["id"] for r in rows],
                                vectors=vectors.normalised(raw))
        await choose_model(rt, 1)
        cache = cache_of(rt)
        out: dict[str, dict[str, float]] = {}
        for language in ("en", "zh"):
            found = {"lexical, SQL": 0, "lexical, in memory": 0, "vector": 0, "hybrid": 0}
            asked = knowledge_labels.questions(language)
            for pid, q in asked:
                tokens = query_tokens(q)
                async with rt.db.session() as db:
                    stamped = await stamps(db, [KB])
                    rankings = {
                        "lexical, SQL": await search.lexical_ranking(db, collection_ids=[KB], tokens=tokens, limit=5),
                        "lexical, in memory": await search.lexical(cache, db, stamps=stamped, tokens=tokens, limit=5),
                        "vector": await embedding.vector_ranking(rt, db, stamps=stamped, query=q, limit=5) or [],
                    }
                    hybrid, mode = await search.rank(rt, db, collection_ids=[KB], query=q, tokens=tokens, top_k=5)
                assert mode == "hybrid"
                rankings["hybrid"] = hybrid
                for name, ranking in rankings.items():
                    found[name] += chunk_of[pid] in [r.chunk_id for r in ranking]
            out[language] = {name: hits / len(asked) for name, hits in found.items()}
        return out
    finally:
        await rt.models.aclose()
        await rt.db.dispose()


def report_quality(label: str, results: dict[str, dict[str, float]]) -> None:
    print(f"  recall@5, {label}")
    for language, by in results.items():
        best = max(by["lexical, in memory"], by["vector"])
        print(f"    {language}: " + "   ".join(f"{k} {v:.3f}" for k, v in by.items())
              + f"   (hybrid − better of lexical and vector: {by['hybrid'] - best:+.3f})")


def report(label: str, results: dict[str, list[float]]) -> None:
    print(f"  {label}")
    for name, values in results.items():
        tail = f"p95 {p95(values):8.2f} ms" if len(values) > 1 else " " * 15
        print(f"    {name:22} median {statistics.median(values):8.2f} ms   {tail}   ({len(values)} queries)")

    def ratio(base: str, new: str) -> str:
        a, b = results[base], results[new]
        return f"{base} / {new}: {statistics.median(a) / statistics.median(b):.1f}x median, {p95(a) / p95(b):.1f}x p95"

    print("    " + ratio("lexical, SQL", "lexical, in memory"))
    if "vector, scanned" in results:
        print("    " + ratio("vector, scanned", "vector, cached"))
    print("    " + ratio("hybrid, SQL lexical", "hybrid top-10"))
    goal = p95(results["hybrid top-10"])
    print(f"    hybrid top-10 p95 {goal:.1f} ms: goal ≤ {GOAL_MS:.0f} ms {'met' if goal <= GOAL_MS else 'NOT met'}")


async def on(server: str | None, label: str, work: Callable[[str, Path], Awaitable[Any]]) -> Any:
    """``work(url, data dir)`` on a fresh SQLite file, or a fresh database on the PostgreSQL ``server``."""
    with tempfile.TemporaryDirectory() as tmp:
        if server is None:
            return await work(f"sqlite+aiosqlite:///{Path(tmp) / 'agentloft.db'}", Path(tmp))
        os.environ["AGENTLOFT_TEST_POSTGRES_URL"] = server
        from tests.pg import database as pg

        name = pg.new_name(label)
        url = pg.create_database(name)
        try:
            return await work(url, Path(tmp))
        finally:
            pg.drop_database(name)


async def main_async(args: argparse.Namespace) -> None:
    port = free_port()
    fake = spawn("bench.knowledge", "--serve-fake", str(port))
    targets = ([("SQLite", None)] if args.sqlite else []) + ([("PostgreSQL", args.postgres)] if args.postgres else [])
    try:
        await wait_up(f"http://127.0.0.1:{port}/v1/models")
        fake_url = f"http://127.0.0.1:{port}"
        if args.quality:
            for db_label, server in targets:
                report_quality(db_label, await on(server, "bench_kq", lambda u, d: quality(u, d, fake_url)))
        for n in [int(x) for x in args.chunks.split(",") if x]:
            for db_label, server in targets:
                results = await on(server, "bench_kv", lambda u, d, n=n: measure(u, d, n, args, fake_url))
                report(f"{db_label}, {n:,} chunks (load {os.getloadavg()[0]:.1f})", results)
    finally:
        stop_all([fake])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--chunks", default="10000,100000")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (a database is made and dropped)")
    parser.add_argument("--no-sqlite", dest="sqlite", action="store_false", help="only the PostgreSQL runs")
    parser.add_argument("--scan", action="store_true", help="also the scanned vector baseline (seconds a query)")
    parser.add_argument("--no-quality", dest="quality", action="store_false", help="skip the recall@5 part")
    parser.add_argument("--serve-fake", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake:
        serve_fake(args.serve_fake)
        return
    print(f"knowledge retrieval: {DIM} dimensions, top {TOP_K} (rankings {DEPTH} deep for hybrid), "
          f"load {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]}")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
