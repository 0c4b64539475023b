"""Vector and hybrid knowledge retrieval: what the in-process vector cache buys, and hybrid search's latency.

One collection of N chunks (generated text over a 5,000-word vocabulary, Zipf-distributed, ~40 words each)
with a random unit vector of 256 values per chunk (the fake embedding model's length) is written straight
into a migrated database (SQLite, or PostgreSQL with ``--postgres``); the fake OpenAI-compatible server runs
in its own process and embeds every query over HTTP, as a real embedding server would. Per query, in the
same run and the same process, the search functions the API calls are timed:

- **lexical top-10** (the baseline for hybrid): ``knowledge.service.search_collections`` with no embedding
  model chosen;
- **vector, scanned** (the baseline for the cache): the query embedded, then the collection's vectors read
  from the database and multiplied (``knowledge.vectors.scan_top``), top 40;
- **vector, cached**: the query embedded, then ``vectors.nearest`` over the matrix kept in memory
  (freshness read, product, partial sort, existence check), top 40;
- **hybrid top-10**: ``search_collections`` with the model chosen: the lexical ranking (top 40), the query
  embedded, the cached vector ranking, fusion, and the chunks read, as ``GET /api/knowledge/{id}/search``.

Quality (``--quality``, on by default): recall@5 of lexical, vector and hybrid retrieval on the labelled
set of ``bench.knowledge_labels`` (English and Chinese questions over 280 passages, one chunk each),
through the same ranking functions, vectors from the fake embedding model over HTTP.

Also timed alone: **query embedding**, the fake server's answer over HTTP through the ``openai`` SDK,
which every vector search includes. Reported: median and p95 of each, and the ratios scanned/cached and
hybrid/lexical.

    python -m bench.knowledge_vectors [--chunks 10000,100000] [--queries 60] [--postgres URL] [--no-quality]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import insert
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
from agentloft.knowledge.models import KnowledgeChunk, KnowledgeCollection, KnowledgeFile, KnowledgeVector
from agentloft.knowledge.terms import query_tokens, terms
from agentloft.llm.models import ModelConfig
from agentloft.system.models import AppSetting
from bench import knowledge_labels
from bench.common import spawn, stop_all, wait_up

DIM = 256
VOCAB = 5000
WORDS_PER_CHUNK = 40
TOP_K = 10
DEPTH = 40  # what hybrid search asks of each ranking for a top 10 (knowledge.search.FUSION_DEPTH × 10)
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


async def base_rows(rt: Runtime, fake_url: str, n: int) -> None:
    """A user, an embedding model at the fake server, one collection with one file of ``n`` chunks."""
    await add_user(rt.db)
    now = utcnow()
    async with rt.db.session() as db:
        db.add(ModelConfig(id=1, name="Fake embeddings", kind="embedding", provider="openai",
                           base_url=f"{fake_url}/v1", model="fake-embed", enabled=True, is_default=False))
        db.add(KnowledgeCollection(id=KB, user_id=1, name="Bench", description=""))
        db.add(File(id="fl_bench", user_id=1, name="bench.txt", media_type="text/plain", size=1, sha256="0" * 64,
                    status="ready", created_at=now))
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


async def choose_model(rt: Runtime, model_id: int | None) -> None:
    async with rt.db.session() as db:
        row = await db.get(AppSetting, "embedding_model_id")
        if row is None:
            db.add(AppSetting(key="embedding_model_id", value=model_id))
        else:
            row.value = model_id


async def timed(queries: list[str], run: Callable[[str], Awaitable[Any]]) -> list[float]:
    """Milliseconds per query, after one warm-up query."""
    await run(queries[0])
    out: list[float] = []
    for q in queries:
        started = time.perf_counter()
        await run(q)
        out.append((time.perf_counter() - started) * 1000)
    return out


def p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


async def embed_query(rt: Runtime, q: str) -> np.ndarray:
    async with rt.db.session() as db:
        model = await db.get(ModelConfig, 1)
        assert model is not None
    from agentloft.llm import service as llm_service

    raw = await rt.models.embed(llm_service.spec_of(row=model, box=rt.box), [q])
    return vectors.normalised(raw)[0]


async def measure(database_url: str, data_dir: Path, n: int, queries_n: int, fake_url: str) -> dict[str, list[float]]:
    rt = await runtime(database_url, data_dir)
    rng = np.random.default_rng(31)
    words = vocabulary(rng)
    try:
        await populate(rt, n, fake_url, rng, words)
        queries = [" ".join(words[int(i)] for i in np.minimum(rng.zipf(1.3, size=3), VOCAB) - 1)
                   for _ in range(queries_n)]

        async def lexical(q: str) -> Any:
            found = await knowledge_service.search_collections(rt=rt, collection_ids=[KB], q=q, top_k=TOP_K)
            assert found.mode == "lexical"

        async def scanned(q: str) -> Any:
            query = await embed_query(rt, q)
            async with rt.db.session() as db:
                return await vectors.scan_top(db, KB, 1, query, DEPTH)

        async def cached(q: str) -> Any:
            query = await embed_query(rt, q)
            async with rt.db.session() as db:
                return await vectors.nearest(cache_of(rt), db, stamps=await stamps(db, [KB]), model_id=1,
                                             query=query, limit=DEPTH)

        async def hybrid(q: str) -> Any:
            found = await knowledge_service.search_collections(rt=rt, collection_ids=[KB], q=q, top_k=TOP_K)
            assert found.mode == "hybrid" and len(found.items) == TOP_K

        results = {"lexical top-10": await timed(queries, lexical)}
        await choose_model(rt, 1)
        results["query embedding"] = await timed(queries, lambda q: embed_query(rt, q))
        results["vector, scanned"] = await timed(queries[: max(5, queries_n // 6)], scanned)
        results["vector, cached"] = await timed(queries, cached)
        results["hybrid top-10"] = await timed(queries, hybrid)
        cache = cache_of(rt)
        print(f"    cache: {cache.nbytes / 1e6:.0f} MB for {n:,} chunks, loaded {cache.loads} time(s)")
        return results
    finally:
        await rt.models.aclose()
        await rt.db.dispose()


async def runtime(database_url: str, data_dir: Path) -> Runtime:
    migrate.upgrade(database_url)
    return build_runtime(load_settings(data_dir=data_dir, env="test", secret_key="bench-secret",
                                       database_url=database_url, create_defaults=False))


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
        from agentloft.llm import service as llm_service

        raw = await rt.models.embed(llm_service.spec_of(row=model, box=rt.box), [t for _, t in labelled])
        async with rt.db.session() as db:
            await vectors.store(db, collection_id=KB, model_id=1, chunk_ids=[r["id"] for r in rows],
                                vectors=vectors.normalised(raw))
        await choose_model(rt, 1)
        out: dict[str, dict[str, float]] = {}
        for language in ("en", "zh"):
            found = {"lexical": 0, "vector": 0, "hybrid": 0}
            asked = knowledge_labels.questions(language)
            for pid, q in asked:
                async with rt.db.session() as db:
                    lexical = await search.lexical_ranking(db, collection_ids=[KB], tokens=query_tokens(q), limit=5)
                    vector = await embedding.vector_ranking(rt, db, stamps=await stamps(db, [KB]), query=q,
                                                            limit=5) or []
                    hybrid, mode = await search.rank(rt, db, collection_ids=[KB], query=q, tokens=query_tokens(q),
                                                     top_k=5)
                assert mode == "hybrid"
                for name, ranking in (("lexical", lexical), ("vector", vector), ("hybrid", hybrid)):
                    found[name] += chunk_of[pid] in [r.chunk_id for r in ranking]
            out[language] = {name: hits / len(asked) for name, hits in found.items()}
        return out
    finally:
        await rt.models.aclose()
        await rt.db.dispose()


def report_quality(label: str, results: dict[str, dict[str, float]]) -> None:
    print(f"  recall@5, {label}")
    for language, by in results.items():
        best = max(by["lexical"], by["vector"])
        print(f"    {language}: lexical {by['lexical']:.3f}   vector {by['vector']:.3f}   hybrid {by['hybrid']:.3f}"
              f"   (hybrid − better of the two: {by['hybrid'] - best:+.3f})")


def report(label: str, results: dict[str, list[float]]) -> None:
    print(f"  {label}")
    for name, values in results.items():
        print(f"    {name:18} median {statistics.median(values):8.2f} ms   p95 {p95(values):8.2f} ms   "
              f"({len(values)} queries)")
    scan, cache = results["vector, scanned"], results["vector, cached"]
    hybrid, lexical = results["hybrid top-10"], results["lexical top-10"]
    print(f"    scanned / cached: {statistics.median(scan) / statistics.median(cache):.1f}x (median)   "
          f"hybrid / lexical: {statistics.median(hybrid) / statistics.median(lexical):.2f}x (median), "
          f"{p95(hybrid) / p95(lexical):.2f}x (p95)")


async def main_async(args: argparse.Namespace) -> None:
    port = free_port()
    fake = spawn("bench.knowledge_vectors", "--serve-fake", str(port))
    try:
        await wait_up(f"http://127.0.0.1:{port}/v1/models")
        fake_url = f"http://127.0.0.1:{port}"
        if args.quality:
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite+aiosqlite:///{Path(tmp) / 'agentloft.db'}"
                report_quality("SQLite", await quality(url, Path(tmp), fake_url))
            if args.postgres:
                os.environ["AGENTLOFT_TEST_POSTGRES_URL"] = args.postgres
                from tests.pg import database as pg

                name = pg.new_name("bench_kq")
                url = pg.create_database(name)
                try:
                    with tempfile.TemporaryDirectory() as tmp:
                        report_quality("PostgreSQL", await quality(url, Path(tmp), fake_url))
                finally:
                    pg.drop_database(name)
        for n in [int(x) for x in args.chunks.split(",") if x]:
            with tempfile.TemporaryDirectory() as tmp:
                url = f"sqlite+aiosqlite:///{Path(tmp) / 'agentloft.db'}"
                report(f"SQLite, {n:,} chunks", await measure(url, Path(tmp), n, args.queries, fake_url))
            if args.postgres:
                os.environ["AGENTLOFT_TEST_POSTGRES_URL"] = args.postgres
                from tests.pg import database as pg

                name = pg.new_name("bench_kv")
                url = pg.create_database(name)
                try:
                    with tempfile.TemporaryDirectory() as tmp:
                        report(f"PostgreSQL, {n:,} chunks", await measure(url, Path(tmp), n, args.queries, fake_url))
                finally:
                    pg.drop_database(name)
    finally:
        stop_all([fake])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chunks", default="10000,100000")
    parser.add_argument("--queries", type=int, default=60)
    parser.add_argument("--postgres", default=None, help="a PostgreSQL server URL (a database is made and dropped)")
    parser.add_argument("--no-quality", dest="quality", action="store_false", help="skip the recall@5 part")
    parser.add_argument("--serve-fake", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake:
        serve_fake(args.serve_fake)
        return
    print(f"knowledge vectors: {DIM} dimensions, top {TOP_K} (vector rankings {DEPTH} deep), "
          f"load {os.getloadavg()[0]:.1f}, python {sys.version.split()[0]}")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
