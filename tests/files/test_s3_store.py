"""The S3-compatible file store (``AGENTLOFT_FILE_STORE=s3://bucket/prefix``) against a real local S3 server:
moto's, started here as a process of its own on a free port (no service to install). The store keeps,
returns and deletes objects under the prefix; the files API works on it as on the data dir."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentloft.files.store import ObjectMissing, S3Store
from tests.files.conftest import BUCKET
from tests.support import LiveApp, start_app


def test_the_store_keeps_returns_and_deletes_objects(s3_env: str) -> None:
    store = S3Store(f"s3://{BUCKET}/unit")

    async def main() -> None:
        await store.put("1/fl_a", b"\x00bytes")
        assert await store.get("1/fl_a") == b"\x00bytes"
        await store.delete("1/fl_a")
        await store.delete("1/fl_a")  # a missing one is no error
        with pytest.raises(ObjectMissing):
            await store.get("1/fl_a")
        with pytest.raises(ValueError):
            await store.put("../x", b"")

    asyncio.run(main())
    listed = httpx.get(f"{s3_env}/{BUCKET}?list-type=2&prefix=unit/").text
    assert "<Key>" not in listed


@pytest.fixture
def s3_app(tmp_path: Path, template_db: Path, s3_env: str) -> Iterator[LiveApp]:
    live = start_app(tmp_path / "data", template_db, file_store=f"s3://{BUCKET}/api")
    yield live
    live.stop()


def test_the_files_api_keeps_files_in_the_bucket(s3_app: LiveApp, s3_env: str) -> None:
    with s3_app.client() as c:
        c.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
        body = c.ok("POST", "/api/files", files={"file": ("a.md", "# 标题\n".encode(), "text/plain")}, status=201)
        assert c.get(f"/api/files/{body['id']}/content").content == "# 标题\n".encode()
        listed = httpx.get(f"{s3_env}/{BUCKET}?list-type=2&prefix=api/").text
        assert f"api/1/{body['id']}</Key>" in listed and not (s3_app.data_dir / "files").exists()
        c.ok("DELETE", f"/api/files/{body['id']}", status=204)
        assert c.get(f"/api/files/{body['id']}/content").status_code == 404
        assert "<Key>" not in httpx.get(f"{s3_env}/{BUCKET}?list-type=2&prefix=api/").text
