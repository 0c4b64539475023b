"""PostgreSQL's folded search text (migration 0007): ``coalesce(search_text, lower(...))`` is
``agentloft_fold`` of every row, ASCII or not, and the searches' expressions for it are the trigram
indexes' own, character for character in effect (else the planner scans the table instead)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import asyncpg
import pytest

from agentloft.chat import search as chat_search
from agentloft.core import migrate
from agentloft.documents import search
from tests.pg import database as pg

TEXTS = {
    "ascii": "Plain ASCII text",
    "wide": "会议记录，全角ＡＢＣ１２３！（草稿）\u3000下午",
    "kana": "ｶﾀｶﾅの議事録",
    "circled": "第①条　合同",
}


@pytest.fixture
def db_url() -> Iterator[str]:
    with pg.scratch_database("fold") as url:
        migrate.upgrade(url)
        pg.query(url, "INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
                      "VALUES (1, 'u1', 'x', 'user', false, now(), now())")
        for key, content in TEXTS.items():
            pg.query(url, "INSERT INTO agent_documents (id, user_id, type, title, content, created_at, "
                          "updated_at) VALUES (?, 1, 'memory', 't', ?, now(), now())", (key, content))
        yield url


def test_the_folded_text_is_agentloft_fold_for_every_row(db_url: str) -> None:
    rows = pg.query(db_url, f"SELECT id, {search.PG_SEARCH_FOLDED} = agentloft_fold({search.PG_SEARCH_EXPR}), "
                            f"{search.PG_SEARCH_FOLDED} FROM agent_documents")
    assert all(same for _, same, _ in rows), rows
    folded = {key: text for key, _, text in rows}
    assert "全角abc123!(草稿) 下午" in folded["wide"] and "カタカナ" in folded["kana"] and "1条" in folded["circled"]


@pytest.mark.parametrize(("table", "folded", "index"), [
    ("agent_documents", search.PG_SEARCH_FOLDED, "idx_agent_doc_search_trgm"),
    ("agent_messages", chat_search.PG_MESSAGE[1], "idx_agent_messages_search_trgm"),
])
def test_the_searches_use_the_trigram_indexes(db_url: str, table: str, folded: str, index: str) -> None:
    where = " AND agent_messages.source <> 'a2a'" if table == "agent_messages" else ""

    async def plan() -> str:
        conn = await asyncpg.connect(db_url.replace("postgresql+asyncpg://", "postgresql://"))
        try:
            await conn.execute("SET enable_seqscan = off")  # the tables are tiny: only a mismatch scans
            rows = await conn.fetch(f"EXPLAIN SELECT 1 FROM {table} WHERE {folded} LIKE '%abc%'{where}")
            return "\n".join(r[0] for r in rows)
        finally:
            await conn.close()

    assert index in asyncio.run(plan())
