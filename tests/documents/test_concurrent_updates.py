"""Updates of one document at the same time all land, one after the other, each replaced state kept with
its own version number (never a server error, never two versions with one number), on both databases.
The database numbers the version after the row's lock (migration 0015), so a writer that waited for
another numbers after it; a clash on the number would be a 409 ``document_conflict``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.core.errors import Conflict
from agentloft.documents import service as documents
from agentloft.documents.models import AgentDocumentVersion
from tests.support import add_user


@pytest.fixture
def migrated(blank_database_url: str) -> Iterator[str]:
    migrate.upgrade(blank_database_url)
    yield blank_database_url


async def _update(db: Database, doc_id: str, content: str) -> str:
    try:
        async with db.session() as s:
            await documents.update_document(db=s, user_id=1, document_id=doc_id, changes={"content": content})
    except Conflict as exc:
        assert exc.code == "document_conflict"
        return "refused"
    return content


async def _run(url: str) -> None:
    db = Database(url)
    try:
        await add_user(db)
        async with db.session() as s:
            doc_id = (await documents.create_document(db=s, user_id=1, title="t", content="v0")).id
        for rnd in range(5):
            outcomes = await asyncio.gather(*(_update(db, doc_id, f"r{rnd}w{w}") for w in range(3)))
            assert "refused" not in outcomes, outcomes
        async with db.session() as s:
            numbers = list((await s.execute(select(AgentDocumentVersion.version)
                                            .where(AgentDocumentVersion.document_id == doc_id)
                                            .order_by(AgentDocumentVersion.version))).scalars())
            doc = await documents.get_document_by_id(db=s, user_id=1, document_id=doc_id)
        assert numbers == list(range(1, 16))
        assert doc.content.startswith("r4w")
    finally:
        await db.dispose()


def test_concurrent_updates_all_land_in_turn(migrated: str) -> None:
    asyncio.run(_run(migrated))
