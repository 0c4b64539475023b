"""What one user stores (``AGENTLOFT_USER_STORAGE_BYTES``, ``core.storage_quota``): the database's count
follows every write of documents, versions and files, a write past the limit is a 413
``storage_quota_exceeded`` that keeps nothing, through the API and through the document tool, and two
uploads at once cannot pass the limit together. Here the limit is 20,000 bytes. Runs on SQLite and, in
the PostgreSQL pass, on PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from alembic import command
from sqlalchemy import text

from agentloft.app import build_runtime
from agentloft.auth.models import User
from agentloft.core import migrate, storage_quota
from agentloft.core.db import Database
from agentloft.core.settings import load_settings
from agentloft.files import service as files_service
from agentloft.files.store import FileStore
from agentloft.tools.base import ToolContext
from agentloft.tools.runner import RunTool, run_tool
from agentloft.tools.types.document import TOOL_TYPE
from tests.support import ApiClient, LiveApp, start_app

LIMIT = 20_000
DOCS = "/api/agent-documents"


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    live = start_app(tmp_path / "data", template_db, user_storage_bytes=LIMIT)
    yield live
    live.stop()


def _utf8(*values: str | None) -> int:
    return sum(len((v or "").encode()) for v in values)


def stored(app: LiveApp, user_id: int) -> int:
    """What the user stores, summed from the rows themselves."""
    docs = app.sql("SELECT title, content, summary, tags FROM agent_documents WHERE user_id = ?", (user_id,))
    versions = app.sql("SELECT v.title, v.content, v.summary, v.tags FROM agent_document_versions v "
                       "JOIN agent_documents d ON d.id = v.document_id WHERE d.user_id = ?", (user_id,))
    files = app.sql("SELECT size FROM files WHERE user_id = ?", (user_id,))
    return sum(_utf8(*row) for row in docs + versions) + sum(int(size) for (size,) in files)


def counted(app: LiveApp, user_id: int) -> int:
    rows = app.sql("SELECT bytes FROM user_storage WHERE user_id = ?", (user_id,))
    return int(rows[0][0]) if rows else 0


def me(client: ApiClient) -> int:
    return client.ok("GET", "/api/auth/me")["id"]


def upload(client: ApiClient, name: str, data: bytes) -> httpx.Response:
    return client.post("/api/files", files={"file": (name, data, "text/plain")})


def refused(response: httpx.Response, used: int) -> dict[str, Any]:
    assert response.status_code == 413, response.text
    error = response.json()["error"]
    assert error["code"] == "storage_quota_exceeded"
    assert f"{storage_quota.size_text(used)} of your {storage_quota.size_text(LIMIT)}" in error["message"]
    return error


def test_the_count_follows_documents_versions_and_files(app: LiveApp, user: ApiClient) -> None:
    uid = me(user)
    assert counted(app, uid) == 0
    doc = user.ok("POST", DOCS, json={"title": "数据库", "content": "内容 " * 300, "tags": "a,b"}, status=201)
    assert counted(app, uid) == stored(app, uid) > 0
    user.ok("PUT", f"{DOCS}/{doc['id']}", json={"content": "shorter", "summary": "摘要"})  # keeps a version
    user.ok("PUT", f"{DOCS}/{doc['id']}", json={"title": "renamed"})
    assert app.sql("SELECT count(*) FROM agent_document_versions")[0][0] == 2
    assert counted(app, uid) == stored(app, uid)
    user.ok("POST", f"{DOCS}/{doc['id']}/versions/1/restore")
    file = upload(user, "a.txt", "文字".encode() * 100).json()
    assert counted(app, uid) == stored(app, uid)
    user.ok("DELETE", f"{DOCS}/{doc['id']}", status=204)  # with its versions
    assert counted(app, uid) == stored(app, uid) == 600
    user.ok("DELETE", f"/api/files/{file['id']}", status=204)
    assert counted(app, uid) == stored(app, uid) == 0


def test_versions_dropped_beyond_the_kept_ones_stop_counting(app: LiveApp, user: ApiClient) -> None:
    uid = me(user)
    doc = user.ok("POST", DOCS, json={"title": "t", "content": "v0"}, status=201)
    for n in range(1, 103):
        user.ok("PUT", f"{DOCS}/{doc['id']}", json={"content": f"v{n}" + "x" * (n % 7)})
    assert app.sql("SELECT count(*) FROM agent_document_versions")[0][0] == 100
    assert counted(app, uid) == stored(app, uid)


def test_a_document_past_the_limit_is_refused_and_keeps_nothing(app: LiveApp, user: ApiClient,
                                                                 make_user: Callable[..., ApiClient]) -> None:
    uid = me(user)
    doc = user.ok("POST", DOCS, json={"title": "t", "content": "a" * 11_000, "summary": "s"}, status=201)
    used = counted(app, uid)
    error = refused(user.post(DOCS, json={"title": "t", "content": "b" * 12_000, "summary": "s"}), used)
    assert error["fieldCodes"]["content"]["code"] == "storage_quota_exceeded"
    assert app.sql("SELECT count(*) FROM agent_documents")[0][0] == 1
    # an update keeps the replaced state as a version: 11,000 bytes kept once more would pass the limit
    refused(user.put(f"{DOCS}/{doc['id']}", json={"title": "only the title"}), used)
    assert app.sql("SELECT title FROM agent_documents")[0][0] == "t"
    assert app.sql("SELECT count(*) FROM agent_document_versions")[0][0] == 0
    assert counted(app, uid) == used == stored(app, uid)
    # what fits still goes in, and another user has a limit of their own
    user.ok("POST", DOCS, json={"title": "t", "content": "c" * 1_000, "summary": "s"}, status=201)
    bob = make_user("bob")
    bob.ok("POST", DOCS, json={"title": "t", "content": "d" * 12_000, "summary": "s"}, status=201)
    # deleting makes room again
    user.ok("DELETE", f"{DOCS}/{doc['id']}", status=204)
    user.ok("POST", DOCS, json={"title": "t", "content": "b" * 12_000, "summary": "s"}, status=201)


def test_a_file_past_the_limit_is_refused_before_it_is_stored(app: LiveApp, user: ApiClient) -> None:
    uid = me(user)
    assert upload(user, "a.txt", b"a" * 15_000).status_code == 201
    error = refused(upload(user, "b.txt", b"b" * 6_000), 15_000)
    assert error["fieldCodes"]["file"]["params"] == {"used": "14.6 KiB", "limit": "19.5 KiB", "needed": "5.86 KiB"}
    assert app.sql("SELECT count(*) FROM files")[0][0] == 1
    assert len(list((app.data_dir / "files" / str(uid)).iterdir())) == 2  # the first file and its text
    assert upload(user, "c.txt", b"c" * 5_000).status_code == 201


def test_deleting_a_user_deletes_their_count(app: LiveApp, make_user: Callable[..., ApiClient]) -> None:
    bob = make_user("bob")
    uid = me(bob)
    for n in range(2):  # more than one of each: PostgreSQL checks a counter row updated twice
        doc = bob.ok("POST", DOCS, json={"title": "t", "content": f"words {n}"}, status=201)
        bob.ok("PUT", f"{DOCS}/{doc['id']}", json={"content": "changed"})
        assert upload(bob, f"{n}.txt", b"abc").status_code == 201

    async def delete_user() -> None:  # as the app's engine does it: foreign keys on, cascading
        db = Database(app.database_url or f"sqlite+aiosqlite:///{app.db_path}")
        try:
            async with db.session() as s:
                await s.execute(text("DELETE FROM users WHERE id = :id"), {"id": uid})
        finally:
            await db.dispose()

    asyncio.run(delete_user())
    assert app.sql("SELECT count(*) FROM agent_documents")[0][0] == 0
    assert app.sql("SELECT count(*) FROM user_storage WHERE user_id = ?", (uid,))[0][0] == 0


def _tool(**config: Any) -> RunTool:
    cfg = TOOL_TYPE.Config.model_validate(config)
    return RunTool(id="at_test", name="document", title="Documents", description=TOOL_TYPE.describe(cfg),
                   type=TOOL_TYPE, config=cfg, needs_approval=False)


def test_the_document_tool_tells_the_model_the_storage_is_full(app: LiveApp, user: ApiClient) -> None:
    uid = me(user)
    assert upload(user, "a.txt", b"a" * 18_000).status_code == 201
    runtime = build_runtime(load_settings(data_dir=app.data_dir, env="test", secret_key="test-secret-key",
                                          user_storage_bytes=LIMIT))
    ctx = ToolContext(runtime=runtime, tool_id="at_test", tool_slug="document", user_id=uid, user_role="user")

    async def create() -> Any:
        try:
            return await run_tool(_tool(), {"action": "create", "title": "notes", "content": "x" * 3_000}, ctx)
        finally:
            await runtime.db.dispose()

    result = asyncio.run(create())
    assert not result.success and result.metadata["code"] == "storage_quota_exceeded"
    assert "17.6 KiB of your 19.5 KiB storage limit are in use" in (result.error or "")
    assert app.sql("SELECT count(*) FROM agent_documents")[0][0] == 0


class _MeetingStore:
    """The data dir's store, whose puts wait until ``expected`` uploads are putting at once: both passed
    the check made before the store, as two uploads at the same moment do."""

    def __init__(self, inner: FileStore, expected: int) -> None:
        self.inner, self.expected, self.putting = inner, expected, 0
        self.met = asyncio.Event()

    async def put(self, key: str, data: bytes) -> None:
        if not key.endswith(".text.json"):
            self.putting += 1
            if self.putting >= self.expected:
                self.met.set()
            await self.met.wait()
        await self.inner.put(key, data)

    async def get(self, key: str) -> bytes:
        return await self.inner.get(key)

    async def delete(self, key: str) -> None:
        await self.inner.delete(key)


def test_two_uploads_at_once_cannot_pass_the_limit_together(app: LiveApp, user: ApiClient) -> None:
    uid = me(user)
    runtime = build_runtime(load_settings(data_dir=app.data_dir, env="test", secret_key="test-secret-key",
                                          user_storage_bytes=LIMIT))
    runtime.file_store = _MeetingStore(runtime.file_store, expected=2)

    async def both() -> list[Any]:
        try:
            async with runtime.db.read_session() as db:
                owner = await db.get_one(User, uid)
            return await asyncio.gather(*(
                files_service.create(rt=runtime, user=owner, name=f"{n}.txt", data=n.encode() * 12_000)
                for n in "ab"), return_exceptions=True)
        finally:
            await runtime.db.dispose()

    results = asyncio.run(both())
    assert sorted(type(r).__name__ for r in results) == ["File", "StorageQuotaExceeded"]
    assert app.sql("SELECT count(*) FROM files")[0][0] == 1
    assert counted(app, uid) == stored(app, uid) == 12_000
    assert len(list((app.data_dir / "files" / str(uid)).iterdir())) == 2  # the refused one's objects went


def test_the_migration_counts_what_is_stored_already(blank_database_url: str) -> None:
    url = blank_database_url
    migrate.upgrade(url, "0026_knowledge_vocab")
    stamp = "'2026-01-01 00:00:00'"

    async def fill() -> None:
        db = Database(url)
        try:
            async with db.session() as s:
                for u in (1, 2):
                    await s.execute(text(
                        "INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
                        f"VALUES ({u}, 'u{u}', 'x', 'user', false, {stamp}, {stamp})"))
                await s.execute(text(
                    "INSERT INTO agent_documents (id, user_id, type, title, content, summary, tags, created_at, "
                    f"updated_at) VALUES ('ad_1', 1, 'memory', 'tï', '数据', NULL, 'x', {stamp}, {stamp})"))
                await s.execute(text("UPDATE agent_documents SET content = 'abc' WHERE id = 'ad_1'"))  # a version
                await s.execute(text(
                    "INSERT INTO files (id, user_id, name, media_type, size, sha256, status, created_at) "
                    f"VALUES ('fl_1', 2, 'a', 'text/plain', 1234, 'x', 'ready', {stamp})"))
        finally:
            await db.dispose()

    async def counts() -> dict[int, int]:
        db = Database(url)
        try:
            async with db.read_session() as s:
                return {u: await storage_quota.stored_bytes(db=s, user_id=u) for u in (1, 2)}
        finally:
            await db.dispose()

    asyncio.run(fill())
    migrate.upgrade(url)
    # ad_1: "tï" (3 bytes) + "abc" + "x" now, and "tï" + "数据" (6 bytes) + "x" as its version
    assert asyncio.run(counts()) == {1: 7 + 10, 2: 1234}
    command.downgrade(migrate.alembic_config(url), "0026_knowledge_vocab")
    migrate.upgrade(url)  # and back: the count is made again from the rows
    assert asyncio.run(counts()) == {1: 17, 2: 1234}
