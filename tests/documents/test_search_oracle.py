"""Search against an oracle: random documents in mixed scripts (Chinese, kana, full-width and ASCII letters
and digits, CJK punctuation) and random queries of one to three terms of one to three characters; every
search must find exactly the documents whose folded title, summary, tags or content hold every term, with
the exact total, also by type, and again after random edits and deletes; and any page of a search must be
that slice of the whole list. The ranked window is small, so most searches also add older matches. On
PostgreSQL the kept totals of lone short terms (migration 0014) are made early, so the later searches
read them (and look for their window among the newest documents)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Iterator

import pytest
from sqlalchemy import insert, text

from agentloft.auth.models import User
from agentloft.core import migrate
from agentloft.core.db import Database, utcnow
from agentloft.core.textsearch import fold
from agentloft.documents import search
from agentloft.documents import service as documents
from agentloft.documents.models import AgentDocument

ALPHABET = ["咖", "啡", "茶", "数", "据", "據", "ア", "ｶ", "カ", "ａ", "Ａ", "a", "b", "１", "1", "，", "。", " "]
TYPES = ("memory", "document")


@pytest.fixture
def migrated(blank_database_url: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setattr(search, "PG_KEEP_COUNT_FROM", 3)
    monkeypatch.setattr(search, "RANK_WINDOW", 7)  # most searches rank a window and add older matches
    migrate.upgrade(blank_database_url)
    yield blank_database_url


def _text(rng: random.Random, longest: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, longest))).strip() or "x"


def _query(rng: random.Random) -> str:
    terms = ["".join(rng.choice(ALPHABET[:-1]) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(1, 3))]
    return " ".join(terms if rng.random() < 0.8 else terms[:1])


def _holds(doc: AgentDocument, q: str) -> bool:
    texts = [fold(v) for v in (doc.title, doc.summary, doc.tags, doc.content) if v]
    return all(any(fold(term) in t for t in texts) for term in q.split())


async def _check(db: Database, docs: dict[str, AgentDocument], rng: random.Random, queries: int) -> None:
    for _ in range(queries):
        q, kind = _query(rng), rng.choice([None, *TYPES])
        async with db.session() as s:
            found = await search.search_documents(db=s, user_id=1, type=kind, q=q, offset=0, limit=1000)
        assert found is not None
        want = {i for i, d in docs.items() if _holds(d, q) and kind in (None, d.type)}
        got = [d.id for d in found.items]
        assert (found.total, sorted(got)) == (len(want), sorted(want)), (q, kind)
        offset, limit = rng.randint(0, len(got)), rng.randint(1, 10)  # a page is a slice of the whole list
        async with db.session() as s:
            page = await search.search_documents(db=s, user_id=1, type=kind, q=q, offset=offset, limit=limit)
        assert page is not None
        assert (page.total, [d.id for d in page.items]) == (len(want), got[offset:offset + limit]), (q, kind)


async def _write(db: Database, docs: dict[str, AgentDocument], rng: random.Random) -> None:
    async with db.session() as s:
        doc_id = rng.choice(list(docs))
        if rng.random() < 0.25:
            await documents.delete_document(db=s, user_id=1, document_id=doc_id)
            del docs[doc_id]
            return
        field = rng.choice(["title", "content", "tags", "summary", "type"])
        value = rng.choice(TYPES) if field == "type" else _text(rng, 10)
        docs[doc_id] = await documents.update_document(db=s, user_id=1, document_id=doc_id,
                                                       changes={field: value})


async def _run(url: str, seed: int) -> None:
    rng = random.Random(seed)
    db = Database(url)
    try:
        now = utcnow()
        async with db.session() as s:
            await s.execute(insert(User), [
                {"id": u, "username": f"u{u}", "password_hash": "x", "role": "user", "disabled": False,
                 "created_at": now, "updated_at": now} for u in (1, 2)])
        docs: dict[str, AgentDocument] = {}
        for i in range(160):
            async with db.session() as s:
                doc = await documents.create_document(
                    db=s, user_id=1 + i % 4 // 3, title=_text(rng, 6), content=_text(rng, 30),
                    type=rng.choice(TYPES), tags=_text(rng, 4) if rng.random() < 0.3 else None)
            if doc.user_id == 1:
                docs[doc.id] = doc
        await _check(db, docs, rng, 150)
        if db.dialect == "postgresql":  # the later searches read kept totals
            async with db.session() as s:
                assert (await s.execute(text("SELECT count(*) FROM agent_document_gram_counts"))).scalar_one() > 5
        for _ in range(40):
            await _write(db, docs, rng)
        await _check(db, docs, rng, 150)
    finally:
        await db.dispose()


def test_every_search_finds_exactly_what_holds_its_terms(migrated: str) -> None:
    asyncio.run(_run(migrated, seed=19))
