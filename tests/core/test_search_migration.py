"""Migration 0007 on a database that already holds documents, sessions and messages: it indexes what is
there (documents again, folded; chat titles and messages for the first time), the searches find it, and
it goes down to the revision before and up again. On SQLite, or on PostgreSQL in the PostgreSQL pass."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import Table, column, insert, table, text
from sqlalchemy.sql.expression import TableClause

from agentloft.auth.models import User
from agentloft.chat import search as chat_search
from agentloft.chat.models import AgentMessage, AgentSession
from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.documents import service as documents
from agentloft.documents.models import AgentDocument


def _before() -> str:
    """The revision 0007 follows (the chain is re-ordered as other migrations land)."""
    down = ScriptDirectory.from_config(migrate.alembic_config("sqlite://")).get_revision("0007_cjk_search")
    assert down is not None and isinstance(down.down_revision, str)
    return down.down_revision


BEFORE = _before()
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(minutes: int) -> dict[str, datetime]:
    return {"created_at": T0 + timedelta(minutes=minutes), "updated_at": T0 + timedelta(minutes=minutes)}


def _message(mid: str, sid: str, content: str, order: int, source: str = "user") -> dict[str, Any]:
    return {"id": mid, "session_id": sid, "role": "user" if order % 2 == 0 else "assistant", "content": content,
            "parts": [{"type": "text", "text": content}], "model_id": None, "input_tokens": None,
            "output_tokens": None, "status": "complete", "error": None, "sort_order": order, "source": source,
            "a2a_task_id": None, "caller_agent_id": None, "caller_session_id": None, **_at(order)}


def _as_before(full: Table, row: dict[str, Any]) -> TableClause:
    """The table with only the columns the rows name (and their types): a later migration's column, whose
    model default the full table would insert, does not exist yet at the revision before 0007."""
    names = [*row, "id", "user_id", "title", "created_at", "updated_at"]
    return table(full.name, *(column(name, full.c[name].type) for name in names))


async def _fill(db: Database) -> None:
    async with db.session() as s:
        await s.execute(insert(User.__table__), [
            {"id": 1, "username": "alice", "password_hash": "x", "role": "user", "disabled": False, **_at(0)},
            {"id": 2, "username": "bob", "password_hash": "x", "role": "user", "disabled": False, **_at(0)}])
        doc = {"session_id": None, "type": "memory", "tags": None, "summary": None}
        await s.execute(insert(AgentDocument.__table__), [
            {**doc, "id": "ad_1", "user_id": 1, "title": "数据库迁移方案", "content": "ＡＩ 咖啡，茶", **_at(1)},
            {**doc, "id": "ad_2", "user_id": 1, "title": "Other", "content": "nothing", **_at(2)},
            {**doc, "id": "ad_3", "user_id": 2, "title": "Bob", "content": "咖啡", **_at(3)}])
        session = {"agent_id": None, "kind": "llm", "status": "idle", "model_history": None, "deleted_at": None}
        await s.execute(insert(_as_before(AgentSession.__table__, session)), [
            {**session, "id": "as_1", "user_id": 1, "title": "咖啡笔记", **_at(1)},
            {**session, "id": "as_2", "user_id": 1, "title": "任务", **_at(2)},
            {**session, "id": "as_3", "user_id": 1, "title": "咖啡 gone", **_at(3), "deleted_at": T0},
            {**session, "id": "as_4", "user_id": 2, "title": "bob", **_at(4)}])
        await s.execute(insert(AgentMessage.__table__), [
            _message("am_1", "as_1", "我们喝茶", 0), _message("am_2", "as_1", "好的 ＡＩ", 1),
            _message("am_3", "as_2", "秘密任务", 0, source="a2a"), _message("am_4", "as_4", "我们喝茶", 0)])


async def _found(db: Database) -> dict[str, Any]:
    async with db.session() as s:
        async def docs(user_id: int, q: str) -> list[str]:
            return [d.id for d in (await documents.list_documents(db=s, user_id=user_id, q=q)).items]

        async def chats(user_id: int, q: str) -> list[str]:
            hits = await chat_search.search_sessions(db=s, user_id=user_id, q=q, offset=0, limit=20)
            assert hits is not None
            return [h.session.id for h in hits.items]

        return {
            "docs": [await docs(1, "咖啡"), await docs(1, "ai"), await docs(1, "迁移"), await docs(1, "茶"),
                     await docs(2, "咖啡"), await docs(1, "数据库 ai")],
            "chats": [await chats(1, "茶"), await chats(1, "咖啡"), await chats(1, "ai"), await chats(1, "秘密"),
                      await chats(2, "茶"), await chats(2, "咖啡")],
        }


EXPECTED = {
    "docs": [["ad_1"], ["ad_1"], ["ad_1"], ["ad_1"], ["ad_3"], ["ad_1"]],
    "chats": [["as_1"], ["as_1"], ["as_1"], [], ["as_4"], []],
}


async def _check(url: str) -> None:
    await asyncio.to_thread(migrate.upgrade, url, BEFORE)
    db = Database(url)
    try:
        await _fill(db)
        await asyncio.to_thread(migrate.upgrade, url)
        assert await _found(db) == EXPECTED
        if db.dialect == "sqlite":
            async with db.session() as s:
                names = {r[0] for r in await s.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))}
            assert names >= {"agent_documents_fts_ai", "agent_documents_fts_ad", "agent_documents_fts_au",
                             "agent_sessions_search_ai", "agent_sessions_search_au", "agent_sessions_search_bd",
                             "agent_messages_search_ai", "agent_messages_search_au", "agent_messages_search_ad"}
        await db.dispose()
        await asyncio.to_thread(_downgrade, url)  # with the rows in place
        await asyncio.to_thread(migrate.upgrade, url)
        db = Database(url)
        assert await _found(db) == EXPECTED
    finally:
        await db.dispose()


def _downgrade(url: str) -> None:
    command.downgrade(migrate.alembic_config(url), BEFORE)


def test_upgrade_indexes_existing_rows_and_goes_down_again(blank_database_url: str) -> None:
    asyncio.run(_check(blank_database_url))
