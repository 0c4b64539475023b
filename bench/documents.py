"""Documents benchmark: list and full-text search latency at scale, against plain LIKE in the same run,
plus what the search index costs (its size, the time to write a document) before and after migration
0007, measured on the same data in the same run.

100,000 documents for one user among 500,000 in all (mixed English and Chinese text with a Zipf-like
word distribution), in a database made by the real migrations, so the indexes and their triggers are the
app's. The data is loaded at revision ``BASE_REVISION`` (the schema before the gram index: trigrams
only), measured, then upgraded to head by the migration itself (its backfill is timed) and measured
again. Search goes through ``documents.service.list_documents`` (count + one page of 20, as the API
does); the baseline is the same page and count with the seed's ``title/content LIKE '%q%'``. Goals: every
search p95 < 20 ms on SQLite and < 50 ms on PostgreSQL, writes < 5 ms p95, index ≤ 2x the trigram one.

    python -m bench.documents [--total 500000] [--mine 100000] [--runs 40] [--db PATH]
    python -m bench.documents --postgres postgresql+asyncpg://user:pw@127.0.0.1/postgres [--keep]
    python -m bench.documents --postgres URL --fresh --total 20000 [--runs 10]   # a fresh import, unanalysed

``--db PATH`` keeps the SQLite file and reuses it; ``--postgres`` loads the same documents into a
database ``agentloft_bench_documents`` on that server (the role needs CREATEDB), dropped afterwards
unless ``--keep`` (then reused by the next run). ``--at-head`` loads a new database at the current
schema instead (no "before" state, no backfill: minutes instead of ~21 at 500,000 documents); a reused
database reports its index sizes and write times at head.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import asyncpg
from alembic.script import ScriptDirectory
from sqlalchemy import Select, func, or_, select, text
from sqlalchemy.engine import make_url

from agentloft.core import migrate, textsearch
from agentloft.core.db import Database
from agentloft.core.metadata import import_all_models
from agentloft.documents import search, service
from agentloft.documents.models import AgentDocument

PAGE = 20


def _revision_before(revision: str) -> str:
    script = ScriptDirectory.from_config(migrate.alembic_config("sqlite://")).get_revision(revision)
    assert script is not None and isinstance(script.down_revision, str)
    return script.down_revision


BASE_REVISION = _revision_before("0007_cjk_search")  # the schema before the gram index
PG_DATABASE = "agentloft_bench_documents"
# The PostgreSQL trigram index as migration 0004 made it (dropped for the bulk load, then rebuilt).
PG_TRGM_0004 = ("CREATE INDEX idx_agent_doc_search_trgm ON agent_documents USING gin "
                "((title || ' ' || coalesce(summary, '') || ' ' || coalesce(tags, '') || ' ' || content) "
                "gin_trgm_ops)")
LETTERS = "etaoinshrdlcumwfgypbvkjxqz"
LETTER_WEIGHTS = [12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2, 2.0, 2.0,
                  1.9, 1.5, 1.0, 0.8, 0.2, 0.2, 0.1, 0.1]
HAN = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处理府研质"  # noqa: E501

# --- the corpus ----------------------------------------------------------------------------------------


def _vocab(rng: random.Random) -> tuple[list[str], list[str]]:
    english = sorted({"".join(rng.choices(LETTERS, LETTER_WEIGHTS, k=rng.randint(3, 10)))
                      for _ in range(30_000)})[:20_000]
    chinese = sorted({"".join(rng.choices(HAN, k=2)) for _ in range(6_000)})[:4_000]
    rng.shuffle(english)
    rng.shuffle(chinese)
    return english, chinese


def _weights(n: int) -> list[float]:
    return [1.0 / (i + 1) ** 1.05 for i in range(n)]


def _cum_weights(n: int) -> list[float]:
    """Zipf-like word frequencies, cumulative (so each draw is a bisect, not a pass over the list)."""
    return list(itertools.accumulate(_weights(n)))


Doc = tuple[str, int, str, str, str, str, None, datetime, datetime]


def _rows(total: int, mine: int, rng: random.Random, prefix: str = "ad_b") -> Iterator[Doc]:
    english, chinese = _vocab(rng)  # first draws of the seeded generator: see ``load_terms``
    we, wc = _cum_weights(len(english)), _cum_weights(len(chinese))
    start = datetime(2025, 1, 1, tzinfo=UTC)
    every = max(total // mine, 1)
    for i in range(total):
        owner = 1 if i % every == 0 and i // every < mine else 2 + i % 999
        if rng.random() < 0.6:
            words = rng.choices(english, cum_weights=we, k=rng.randint(25, 45))
            title, content = " ".join(words[:5]).capitalize(), " ".join(words[5:]) + "."
        else:
            words = rng.choices(chinese, cum_weights=wc, k=rng.randint(25, 45))
            title, content = "".join(words[:4]), "，".join("".join(words[j:j + 4]) for j in range(4, len(words), 4))
        stamp = start + timedelta(seconds=i * 7)
        yield (f"{prefix}{i:07d}", owner, "memory" if i % 3 else "document", title, content, content[:200],
               None, stamp, stamp)


bench_terms: dict[str, list[str]] = {}
SEED = 7


def load_terms() -> None:
    """The vocabulary the rows were drawn from (the same seeded draws), to pick queries by frequency;
    and the Chinese characters by how often they occur (from the words' weights)."""
    english, chinese = _vocab(random.Random(SEED))
    chars: dict[str, float] = {}
    for word, weight in zip(chinese, _weights(len(chinese)), strict=True):
        for ch in word:
            chars[ch] = chars.get(ch, 0.0) + weight
    bench_terms.update(english=english, chinese=chinese, chars=sorted(chars, key=lambda c: -chars[c]))


# --- building --------------------------------------------------------------------------------------


def _sqlite_stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S.000000")


def build_sqlite(path: Path, total: int, mine: int, at_head: bool = False) -> None:
    """The data at ``BASE_REVISION``: bulk-loaded without the per-row index trigger, then indexed in one
    pass with the trigger's exact rows. ``at_head``: at the current schema, loaded without the insert
    trigger too; ``build_sqlite_at_head`` then indexes it."""
    migrate.upgrade(f"sqlite+aiosqlite:///{path}", "head" if at_head else BASE_REVISION)
    started = time.perf_counter()
    con = sqlite3.connect(path)
    con.execute("PRAGMA journal_mode=WAL")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("PRAGMA cache_size=-262144")
    (trigger_sql,), = con.execute("SELECT sql FROM sqlite_master WHERE name = 'agent_documents_fts_ai'")
    con.execute("DROP TRIGGER agent_documents_fts_ai")
    now = "2025-01-01 00:00:00.000000"
    con.executemany(
        "INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
        "VALUES (?, ?, 'x', 'user', 0, ?, ?)",
        [(u, f"bench{u}", now, now) for u in range(1, 1001)],
    )
    con.executemany(
        "INSERT INTO agent_documents (id, user_id, type, title, content, summary, tags, created_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        ((*r[:7], _sqlite_stamp(r[7]), _sqlite_stamp(r[8])) for r in _rows(total, mine, random.Random(SEED))),
    )
    con.commit()
    loaded = time.perf_counter()
    if at_head:
        con.execute(trigger_sql)
        con.commit()
        con.close()
        print(f"SQLite: loaded {total} rows in {loaded - started:.1f} s")
        return
    con.execute(
        "INSERT INTO agent_documents_fts(rowid, title, summary, tags, content) "
        "SELECT (user_id << 32) + (4294967295 - rowid), title, summary, tags, content FROM agent_documents"
    )
    con.execute(trigger_sql)
    con.commit()
    con.execute("ANALYZE")
    con.close()
    print(f"SQLite: loaded {total} rows in {loaded - started:.1f} s, trigram-indexed in "
          f"{time.perf_counter() - loaded:.1f} s")


async def build_sqlite_at_head(path: Path, total: int, mine: int) -> None:
    """The data at the current schema: bulk-loaded, then indexed in one pass by the app's own rebuild
    (``documents.search.rebuild_index``, the triggers' exact rows), which skips the migrations' backfill."""
    await asyncio.to_thread(build_sqlite, path, total, mine, True)
    started = time.perf_counter()
    db = Database(f"sqlite+aiosqlite:///{path}")
    try:
        async with db.session() as s:
            await search.rebuild_index(db=s)
            await s.commit()
        async with db.session() as s:
            await s.execute(text("ANALYZE"))
    finally:
        await db.dispose()
    print(f"SQLite: indexed at head in {time.perf_counter() - started:.1f} s")


def _pg_connect_args(url: str, database: str | None = None) -> dict[str, object]:
    u = make_url(url)
    return {"host": u.host, "port": u.port, "user": u.username, "password": u.password,
            "database": database or u.database}


async def _pg_admin(url: str, *statements: str) -> None:
    conn = await asyncpg.connect(**_pg_connect_args(url))
    try:
        for statement in statements:
            await conn.execute(statement)
    finally:
        await conn.close()


async def _pg_exists(url: str) -> bool:
    conn = await asyncpg.connect(**_pg_connect_args(url))
    try:
        return bool(await conn.fetchval("SELECT 1 FROM pg_database WHERE datname = $1", PG_DATABASE))
    finally:
        await conn.close()


def pg_url(server: str) -> str:
    return make_url(server).set(drivername="postgresql+asyncpg", database=PG_DATABASE).render_as_string(
        hide_password=False)


async def _pg_load(conn: asyncpg.Connection, total: int, mine: int) -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    await conn.copy_records_to_table(
        "users", columns=["id", "username", "password_hash", "role", "disabled", "created_at", "updated_at"],
        records=[(u, f"bench{u}", "x", "user", False, now, now) for u in range(1, 1001)])
    await conn.copy_records_to_table(
        "agent_documents", columns=["id", "user_id", "type", "title", "content", "summary", "tags",
                                    "created_at", "updated_at"],
        records=_rows(total, mine, random.Random(SEED)))
    await conn.execute("SELECT setval(pg_get_serial_sequence('users', 'id'), 1000)")


async def build_postgres(server: str, total: int, mine: int, at_head: bool = False) -> None:
    """The data in a new database, loaded with COPY without the search indexes, which are then built
    once: at ``BASE_REVISION`` the trigram index as 0004 defines it; ``at_head`` the search indexes exactly
    as the migrations to head made them (their definitions and statistics targets are read back from the
    catalog before they are dropped), which skips the backfill of upgrading a loaded table. Only
    ``ANALYZE`` follows the load: the visibility map stays as a bulk insert leaves it (empty) until a
    vacuum, which is what a busy production table looks like before autovacuum reaches it."""
    await _pg_admin(server, f'CREATE DATABASE "{PG_DATABASE}"',
                    f"ALTER DATABASE \"{PG_DATABASE}\" SET maintenance_work_mem = '512MB'")
    url = pg_url(server)
    await asyncio.to_thread(migrate.upgrade, url, "head" if at_head else BASE_REVISION)
    started = time.perf_counter()
    conn = await asyncpg.connect(**_pg_connect_args(server, PG_DATABASE))
    try:
        indexes = [PG_TRGM_0004]
        if at_head:
            indexes = [r["def"] for r in await conn.fetch(
                "SELECT pg_get_indexdef(indexrelid) AS def FROM pg_index JOIN pg_class c ON c.oid = indexrelid "
                "WHERE indrelid = 'agent_documents'::regclass AND c.relname LIKE 'idx_agent_doc_search%'")]
            indexes += [f"ALTER INDEX {r['idx']} ALTER COLUMN {r['attnum']} SET STATISTICS {r['target']}"
                        for r in await conn.fetch(
                            "SELECT c.relname AS idx, a.attnum, a.attstattarget AS target FROM pg_attribute a "
                            "JOIN pg_class c ON c.oid = a.attrelid JOIN pg_index i ON i.indexrelid = c.oid "
                            "WHERE i.indrelid = 'agent_documents'::regclass "
                            "AND c.relname LIKE 'idx_agent_doc_search%' AND a.attstattarget > 0")]
        for name in await conn.fetch("SELECT relname FROM pg_class WHERE relname LIKE 'idx_agent_doc_search%' "
                                     "AND relkind = 'i'"):
            await conn.execute(f"DROP INDEX {name['relname']}")
        if at_head:  # kept off until the next run's VACUUM (``upgrade``): measured first as loaded
            await conn.execute("ALTER TABLE agent_documents SET (autovacuum_enabled = false)")
        await _pg_load(conn, total, mine)
        loaded = time.perf_counter()
        for statement in indexes:
            await conn.execute(statement)
        await conn.execute("ANALYZE agent_documents" if at_head else "VACUUM ANALYZE agent_documents")
    finally:
        await conn.close()
    print(f"PostgreSQL: loaded {total} rows in {loaded - started:.1f} s, search-indexed in "
          f"{time.perf_counter() - loaded:.1f} s ({'head' if at_head else BASE_REVISION})")


async def upgrade(url: str) -> float:
    """Run the migrations to head (0007 backfills its indexes); returns the seconds it took."""
    started = time.perf_counter()
    await asyncio.to_thread(migrate.upgrade, url)
    took = time.perf_counter() - started
    if url.startswith("sqlite"):
        con = sqlite3.connect(make_url(url).database or "")
        con.execute("ANALYZE")
        con.close()
    else:  # the migration rewrote the table (generated column): the visibility map starts empty
        await _pg_admin(url, "VACUUM ANALYZE agent_documents",
                        "ALTER TABLE agent_documents RESET (autovacuum_enabled)")
    return took


# --- what the index costs: size and writes -----------------------------------------------------------


async def index_sizes(db: Database) -> dict[str, float]:
    """MB of the documents table (with its b-tree indexes), the trigram index and the gram index, and on
    PostgreSQL of the generated folded-text column (counted with the search index, not the table)."""
    if db.dialect == "sqlite":
        sql = ("SELECT CASE WHEN name LIKE 'agent_documents_fts%' THEN 'trigrams' "
               "WHEN name LIKE 'agent_documents_grams%' THEN 'grams' ELSE 'table' END, sum(pgsize) FROM dbstat "
               "WHERE name LIKE 'agent_documents%' OR name LIKE 'idx_agent_doc%' "
               "OR name = 'sqlite_autoindex_agent_documents_1' GROUP BY 1")
    else:
        sql = ("SELECT 'table', pg_table_size('agent_documents') + coalesce(sum(pg_relation_size(i.indexrelid)) "
               "FILTER (WHERE c.relname NOT LIKE 'idx_agent_doc_search%'), 0) "
               "FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "
               "WHERE i.indrelid = 'agent_documents'::regclass "
               "UNION ALL SELECT CASE WHEN relname LIKE '%trgm' THEN 'trigrams' ELSE 'grams' END, "
               "pg_relation_size(oid) FROM pg_class WHERE relname LIKE 'idx_agent_doc_search%'")
    async with db.session() as s:
        sizes = {str(k): int(v) / 1e6 for k, v in (await s.execute(text(sql))).all()}
        if db.dialect == "postgresql" and (await s.execute(text(
                "SELECT 1 FROM pg_attribute WHERE attrelid = 'agent_documents'::regclass "
                "AND attname = 'search_text'"))).first():
            folded = "SELECT coalesce(sum(pg_column_size(search_text)), 0) FROM agent_documents"
            sizes["folded"] = int((await s.execute(text(folded))).scalar_one()) / 1e6
            sizes["table"] -= sizes["folded"]  # the generated column is part of the search machinery
    return sizes


@dataclass
class WriteTimes:
    create: list[float] = field(default_factory=list)
    update: list[float] = field(default_factory=list)
    delete: list[float] = field(default_factory=list)


async def write_times(db: Database, n: int, storage_limit: int = 0) -> WriteTimes:
    """Create, update (new content) and delete ``n`` generated documents of the big user, each in its own
    transaction through the service, as the API does (``storage_limit``: checked as the API checks
    ``AGENTLOFT_USER_STORAGE_BYTES``, 0 not at all); milliseconds."""
    import_all_models()  # the ORM resolves the documents' foreign keys on the first flush
    docs = list(_rows(n, n, random.Random(99), prefix="ad_w"))
    times = WriteTimes()
    ids: list[str] = []
    for doc in docs:
        t = time.perf_counter()
        async with db.session() as s:
            row = await service.create_document(db=s, user_id=1, title=doc[3], content=doc[4], type=doc[2],
                                                storage_limit=storage_limit)
        times.create.append((time.perf_counter() - t) * 1000)
        ids.append(row.id)
    for doc_id, doc in zip(ids, reversed(docs), strict=True):
        t = time.perf_counter()
        async with db.session() as s:
            await service.update_document(db=s, user_id=1, document_id=doc_id, changes={"content": doc[4]},
                                          storage_limit=storage_limit)
        times.update.append((time.perf_counter() - t) * 1000)
    for doc_id in ids:
        t = time.perf_counter()
        async with db.session() as s:
            await service.delete_document(db=s, user_id=1, document_id=doc_id)
        times.delete.append((time.perf_counter() - t) * 1000)
    return times


def _report_sizes(label: str, sizes: dict[str, float]) -> None:
    index = sizes.get("trigrams", 0) + sizes.get("grams", 0) + sizes.get("folded", 0)
    folded = f", folded text column {sizes['folded']:.0f} MB" if "folded" in sizes else ""
    print(f"{label}: table {sizes.get('table', 0):.0f} MB, trigram index {sizes.get('trigrams', 0):.0f} MB, "
          f"gram index {sizes.get('grams', 0):.0f} MB{folded}, search index in all {index:.0f} MB")


async def alternating(rounds: int, states: dict[str, Callable[[], Awaitable[WriteTimes]]]) -> dict[str, WriteTimes]:
    """Write times of each state in alternating rounds (a, b, a, b, ...), so that the machine's changing
    load falls on all of them alike."""
    times = {label: WriteTimes() for label in states}
    for _ in range(rounds):
        for label, one_round in states.items():
            got = await one_round()
            for name in ("create", "update", "delete"):
                getattr(times[label], name).extend(getattr(got, name))
    return times


async def compare_states(base_url: str, head_url: str, writes: int, rounds: int = 4) -> None:
    """Index sizes of both states, and write times measured in alternating rounds."""
    base, head = Database(base_url), Database(head_url)
    try:
        _report_sizes(f"before ({BASE_REVISION})", await index_sizes(base))
        _report_sizes("after (head)", await index_sizes(head))
        if not writes:
            return
        times = await alternating(rounds, {"before": lambda: write_times(base, writes // rounds),
                                           "after": lambda: write_times(head, writes // rounds)})
        for name in ("create", "update", "delete"):
            b, a = getattr(times["before"], name), getattr(times["after"], name)
            print(f"{name} a document ({len(a)} writes each, alternating rounds): before p50 {pct(b, 50):.2f} "
                  f"p95 {pct(b, 95):.2f} ms, after p50 {pct(a, 50):.2f} p95 {pct(a, 95):.2f} ms")
    finally:
        await base.dispose()
        await head.dispose()


async def head_writes(url: str, writes: int) -> None:
    """Index sizes and write times of one database at head (no "before" state to alternate with)."""
    db = Database(url)
    try:
        _report_sizes("head", await index_sizes(db))
        if not writes:
            return
        got = await write_times(db, writes)
        for name in ("create", "update", "delete"):
            t = getattr(got, name)
            print(f"{name} a document ({len(t)} writes): p50 {pct(t, 50):.2f} p95 {pct(t, 95):.2f} "
                  f"max {max(t):.2f} ms")
        if db.dialect == "postgresql":
            await kept_count_writes(db, writes)
    finally:
        await db.dispose()


KEPT = "agent_document_gram_counts"


async def kept_count_writes(db: Database, writes: int, rounds: int = 4) -> None:
    """PostgreSQL: what the big user's kept totals (made by earlier searches, migration 0014) add to a
    write: rounds with them and with none, alternating. A round creates, updates and deletes its own
    documents, so the counts put back after a round without them are still exact."""
    async with db.session() as s:
        kept = [dict(r._mapping) for r in await s.execute(text(f"SELECT * FROM {KEPT} WHERE user_id = 1"))]
    if not kept:
        print("kept totals: none yet (run the searches first)")
        return

    async def without() -> WriteTimes:
        async with db.session() as s:
            await s.execute(text(f"DELETE FROM {KEPT} WHERE user_id = 1"))
        got = await write_times(db, writes // rounds)
        async with db.session() as s:
            await s.execute(text(f"INSERT INTO {KEPT} (user_id, type, gram, n) VALUES (:user_id, :type, :gram, :n)"),
                            kept)
        return got

    times = await alternating(rounds, {"with": lambda: write_times(db, writes // rounds), "without": without})
    for name in ("create", "update", "delete"):
        w, wo = getattr(times["with"], name), getattr(times["without"], name)
        print(f"{name} a document with the user's {len(kept)} kept totals / without (alternating): p50 "
              f"{pct(w, 50):.2f} / {pct(wo, 50):.2f}, p95 {pct(w, 95):.2f} / {pct(wo, 95):.2f} ms")


# --- searching ---------------------------------------------------------------------------------------


def like_baseline(q: str) -> Select[tuple[AgentDocument]]:
    """The seed's search: every term as title/content LIKE, newest first."""
    d = AgentDocument
    stmt = select(d).where(d.user_id == 1)
    for term in q.split():
        stmt = stmt.where(or_(d.title.like(f"%{term}%"), d.content.like(f"%{term}%")))
    return stmt.order_by(d.created_at.desc(), d.id.desc())


async def _like(db: Database, q: str) -> int:
    async with db.session() as s:
        stmt = like_baseline(q)
        total = (await s.execute(select(func.count()).select_from(stmt.order_by(None).subquery()))).scalar_one()
        rows = list((await s.execute(stmt.limit(PAGE))).scalars())
        return int(total) + 0 * len(rows)


async def _service(db: Database, q: str | None, page: int = 1, kind: str | None = None) -> int:
    async with db.session() as s:
        found = await service.list_documents(db=s, user_id=1, q=q, page=page, page_size=PAGE, type=kind)
        return found.total


async def measure(fns: list[Callable[[], Awaitable[int]]], runs: int) -> tuple[list[float], float]:
    """Latencies (ms) over ``runs`` calls cycling through ``fns``; also the mean result (hits)."""
    for fn in fns:
        await fn()
    out, hits = [], []
    for i in range(runs):
        t = time.perf_counter()
        hits.append(await fns[i % len(fns)]())
        out.append((time.perf_counter() - t) * 1000)
    return out, statistics.mean(hits)


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def query_classes() -> dict[str, list[str]]:
    """Five queries per class, picked by word (or character) frequency rank in the generated text."""
    en, zh, chars = bench_terms["english"], bench_terms["chinese"], bench_terms["chars"]
    return {
        "en rare word": [en[i] for i in range(3000, 3005)],
        "en mid word": [en[i] for i in range(300, 305)],
        "en common word": [en[i] for i in range(20, 25)],
        "en two words": [f"{en[i]} {en[i + 50]}" for i in range(100, 105)],
        "en word start, 4 letters": [en[i][:4] for i in range(500, 505) if len(en[i]) >= 4][:5] or [en[500]],
        "en 2 letters": [en[i][:2] for i in range(40, 45)],
        "zh 4 chars, two rarer words": [zh[i] + zh[i + 1] for i in range(150, 155)],  # ~no document
        "zh 4 chars, two common words": [zh[i] + zh[i + 1] for i in range(10, 15)],
        "zh 3 chars": [(zh[i] + zh[i + 1])[:3] for i in range(30, 35)],
        "zh common 3 chars": [(zh[i] + zh[i + 1])[:3] for i in range(2, 7)],
        "zh 2 chars, common word": [zh[i] for i in range(5, 10)],
        "zh 2 chars, rare word": [zh[i] for i in range(2000, 2005)],
        "zh 2 chars across two words": [zh[i][1] + zh[i + 1][0] for i in range(0, 5)],
        "zh 1 char, common": chars[:5],
        "zh 1 char, rare": chars[-8:-3],
        "zh 1 char + 2 chars": [f"{chars[i]} {zh[100 + i]}" for i in range(5)],
        "zh 2 chars + 3 chars": [f"{zh[5 + i]} {(zh[30 + i] + zh[31 + i])[:3]}" for i in range(5)],
        "zh 2 chars + en 2 letters": [f"{zh[5 + i]} {en[40 + i][:2]}" for i in range(5)],  # ~no document
    }


Row = tuple[str, float, float, float]


async def run(url: str, runs: int, only: str | None) -> list[Row]:
    db = Database(url)
    results: list[Row] = []

    async def record(name: str, fns: list[Callable[[], Awaitable[int]]], n: int) -> None:
        t, hits = await measure(fns, n)
        results.append((name, pct(t, 50), pct(t, 95), hits))
        print(f"  {name:48} p50 {pct(t, 50):8.2f}  p95 {pct(t, 95):8.2f}  hits {hits:8.0f}", flush=True)

    try:
        if not only:
            await record("list newest, page 1", [lambda: _service(db, None)], runs)
            await record("list newest, page 100", [lambda: _service(db, None, page=100)], runs)
            await record("list type=memory, page 1", [lambda: _service(db, None, kind="memory")], runs)
        for name, terms in query_classes().items():
            if only and only not in name:
                continue
            await record(f"search {name} fts", [lambda q=q: _service(db, q) for q in terms], runs)
            await record(f"search {name} like", [lambda q=q: _like(db, q) for q in terms], max(runs // 4, 5))
        for name, terms in (("zh 2 chars, common word, type=memory", query_classes()["zh 2 chars, common word"]),
                            ("zh 1 char, common, type=memory", query_classes()["zh 1 char, common"]),
                            ("en common word, type=memory", query_classes()["en common word"])):
            if not only or only in name:
                await record(f"search {name} fts", [lambda q=q: _service(db, q, kind="memory") for q in terms],
                             runs)
        first = "zh 1 char, common, first search"
        if db.dialect == "postgresql" and (not only or only in first):
            await record(f"search {first} fts", [lambda q=q: _first_search(db, q)
                                                  for q in query_classes()["zh 1 char, common"]], max(runs // 4, 5))
    finally:
        await db.dispose()
    return results


async def _first_search(db: Database, q: str) -> int:
    """PostgreSQL: a search of a lone short term whose total is not kept yet: it counts, and with many
    matches counts again and keeps the total (migration 0014)."""
    async with db.session() as s:
        await s.execute(text(f"DELETE FROM {KEPT} WHERE user_id = 1 AND gram = agentloft_fold(:q)"), {"q": q})
    return await _service(db, q)


async def build_fresh(server: str, total: int) -> None:
    """A new database at head holding ``total`` documents of one user, created one by one through
    ``documents.service`` (500 to a transaction), as an import through the API leaves them: autovacuum
    kept off on the table and nothing analysed."""
    await _pg_admin(server, f'CREATE DATABASE "{PG_DATABASE}"')
    url = pg_url(server)
    await asyncio.to_thread(migrate.upgrade, url)
    await _pg_admin(url, "ALTER TABLE agent_documents SET (autovacuum_enabled = false)",
                    "INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
                    "VALUES (1, 'bench1', 'x', 'user', false, now(), now())")
    started = time.perf_counter()
    db = Database(url)
    try:
        async with db.session() as s:
            for i, (_id, _owner, kind, title, content, *_rest) in enumerate(_rows(total, total, random.Random(SEED))):
                await service.create_document(db=s, user_id=1, title=title, content=content, type=kind)
                if i % 500 == 499:
                    await s.commit()
            await s.commit()
    finally:
        await db.dispose()
    print(f"PostgreSQL: created {total} documents through the service in {time.perf_counter() - started:.1f} s")


async def fresh_states(url: str, runs: int, only: str | None) -> None:
    """The searches on a table never analysed, without and with the search's own ANALYZE of the plain
    columns (``textsearch.pg_plan_statistics``), then after a full ``ANALYZE`` (the baseline): what a team
    sees right after an import, and each state's ratio to the analysed one, in the same run."""
    states: dict[str, list[Row]] = {}
    least = textsearch.PG_ANALYZE_FROM_CHANGES
    textsearch.PG_ANALYZE_FROM_CHANGES = 2**62
    print("\nnever analysed, no search ANALYZE (before):")
    states["before"] = await run(url, runs, only)
    textsearch.PG_ANALYZE_FROM_CHANGES = least
    textsearch._statistics_checked.clear()  # pyright: ignore[reportPrivateUsage]
    print("\nnever analysed, the first search analyses the plain columns:")
    states["search ANALYZE"] = await run(url, runs, only)
    started = time.perf_counter()
    await _pg_admin(url, "ANALYZE agent_documents")
    print(f"\nfull ANALYZE agent_documents took {time.perf_counter() - started:.1f} s; analysed:")
    states["analysed"] = await run(url, runs, only)
    base = {name: p50 for name, p50, _, _ in states["analysed"]}
    print(f"\n{'query (p50 ms; x = / analysed)':48} " + " ".join(f"{k:>22}" for k in states))
    for name, *_ in states["analysed"]:
        cells = [f"{next(r[1] for r in rows if r[0] == name):10.1f} "
                 f"({next(r[1] for r in rows if r[0] == name) / base[name]:6.1f}x)" for rows in states.values()]
        print(f"{name:48} " + " ".join(f"{c:>22}" for c in cells))


def report(results: list[Row]) -> None:
    print(f"\n{'query (user with 100k of 500k documents)':52} {'p50 ms':>8} {'p95 ms':>8} {'hits':>8}")
    for name, p50, p95, hits in results:
        print(f"{name:52} {p50:8.2f} {p95:8.2f} {hits:8.0f}")
    rows = {n: (a, b) for n, a, b, _ in results}
    print("\nsearch, LIKE / index:                     p50 ratio  p95 ratio")
    for name in [n for n in rows if n.endswith(" fts") and n[:-4] + " like" in rows]:
        base = rows[name[:-4] + " like"]
        print(f"  {name[7:-4]:38} {base[0] / rows[name][0]:9.1f}x {base[1] / rows[name][1]:9.1f}x")


async def prepare(url: str, build: Callable[[], Awaitable[None]] | None,
                  snapshot: Callable[[], Awaitable[str]], drop: Callable[[], Awaitable[None]], writes: int) -> None:
    """Build at ``BASE_REVISION``, keep a copy of that state, upgrade to head (timed) and compare the two;
    or, reusing what exists, only upgrade it."""
    if build is None:
        took = await upgrade(url)
        print(f"upgraded to head in {took:.1f} s (reused database)")
        await head_writes(url, writes)
        return
    await build()
    base_url = await snapshot()
    try:
        took = await upgrade(url)
        print(f"upgraded to head (migration 0007 and its backfill) in {took:.1f} s")
        await compare_states(base_url, url, writes)
    finally:
        await drop()


def _sqlite_snapshot(path: Path) -> tuple[Callable[[], Awaitable[str]], Callable[[], Awaitable[None]]]:
    base = path.with_name(path.name + ".base")

    async def snapshot() -> str:
        con = sqlite3.connect(path)
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        con.close()
        await asyncio.to_thread(shutil.copyfile, path, base)
        return f"sqlite+aiosqlite:///{base}"

    async def drop() -> None:
        for leftover in path.parent.glob(base.name + "*"):
            leftover.unlink()

    return snapshot, drop


def _pg_snapshot(server: str) -> tuple[Callable[[], Awaitable[str]], Callable[[], Awaitable[None]]]:
    name = PG_DATABASE + "_base"

    async def snapshot() -> str:
        await _pg_admin(server, f'DROP DATABASE IF EXISTS "{name}"',
                        f'CREATE DATABASE "{name}" TEMPLATE "{PG_DATABASE}"')
        return pg_url(server).replace(PG_DATABASE, name)

    async def drop() -> None:
        await _pg_admin(server, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return snapshot, drop


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--total", type=int, default=500_000)
    ap.add_argument("--mine", type=int, default=100_000)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--writes", type=int, default=200, help="documents created, updated, deleted per state")
    ap.add_argument("--only", help="run only the search classes whose name contains this")
    ap.add_argument("--db", type=Path, help="keep the generated SQLite file here and reuse it when it exists")
    ap.add_argument("--postgres", help="an admin URL of a PostgreSQL server: benchmark there instead")
    ap.add_argument("--keep", action="store_true", help="keep the PostgreSQL database (reused next time)")
    ap.add_argument("--fresh", action="store_true",
                    help="PostgreSQL, a new database: --total documents of one user created through the "
                         "service, searched never analysed without and with the search's ANALYZE, then analysed")
    ap.add_argument("--at-head", action="store_true",
                    help="load a new database at the current schema directly (no before/after "
                         "comparison, no backfill)")
    args = ap.parse_args()
    load_terms()
    if args.postgres:
        url = pg_url(args.postgres)
        admin = args.postgres.replace("+asyncpg", "")
        fresh = not asyncio.run(_pg_exists(admin))
        build = (lambda: build_postgres(admin, args.total, args.mine)) if fresh else None
        try:
            if fresh and args.fresh:
                asyncio.run(build_fresh(admin, args.total))
                asyncio.run(fresh_states(url, args.runs, args.only))
                return
            if fresh and args.at_head:
                asyncio.run(build_postgres(admin, args.total, args.mine, at_head=True))
                asyncio.run(head_writes(url, args.writes))
            else:
                asyncio.run(prepare(url, build, *_pg_snapshot(admin), args.writes))
            report(asyncio.run(run(url, args.runs, args.only)))
        finally:
            if not args.keep:
                asyncio.run(_pg_admin(admin, f'DROP DATABASE IF EXISTS "{PG_DATABASE}" WITH (FORCE)'))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = args.db or Path(tmp) / "bench.db"
        url = f"sqlite+aiosqlite:///{path}"
        fresh = not path.exists()

        async def build() -> None:
            await asyncio.to_thread(build_sqlite, path, args.total, args.mine)

        if fresh and args.at_head:
            asyncio.run(build_sqlite_at_head(path, args.total, args.mine))
            asyncio.run(head_writes(url, args.writes))
        else:
            asyncio.run(prepare(url, build if fresh else None, *_sqlite_snapshot(path), args.writes))
        size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 1e6
        print(f"database file(s): {size:.0f} MB")
        report(asyncio.run(run(url, args.runs, args.only)))


if __name__ == "__main__":
    main()
