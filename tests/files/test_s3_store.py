"""The S3-compatible file store (``AGENTLOFT_FILE_STORE=s3://bucket/prefix``) against a real local S3 server:
moto's, started here as a process of its own on a free port (no service to install). The store keeps,
returns and deletes objects under the prefix; the files API works on it as on the data dir, and so do
what reads the files: a chat's attachments and knowledge collections."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentloft.files.store import ObjectMissing, S3Store
from tests.chat.helpers import post_stream, wait_for
from tests.fakes.openai_server import FakeModel, FakeModelServer, call, text
from tests.files import samples
from tests.files.conftest import BUCKET
from tests.knowledge.helpers import add, collection, settled
from tests.support import ApiClient, LiveApp, start_app


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


def test_an_attachment_and_a_knowledge_file_are_read_from_the_bucket(
    s3_app: LiveApp, s3_env: str, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """Beyond the files API: a PDF attached to a message and a DOCX in a knowledge collection are both read
    (in the sandbox) from the bucket, and reach the model in one turn, the one as the message's text, the
    other through the chat's own knowledge tool."""
    with s3_app.client() as c:
        c.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
        c.ok("POST", "/api/admin/models", json={"name": "Fake", "provider": "openai", "model": "fake-model",
                                                 "baseUrl": fake_model_server.base_url, "isDefault": True})
        sent = ready(c, "plan.pdf", samples.pdf("The vault opens at dawn."), "application/pdf")
        kb = collection(c)["id"]
        add(c, kb, ready(c, "keys.docx", samples.docx(heading="Keys", body="Rotate the signing key every ninety days."),
                         "application/vnd.openxmlformats-officedocument.wordprocessingml.document"))
        assert settled(c, kb)["files"][0]["status"] == "ready"
        assert not (s3_app.data_dir / "files").exists()
        fake_model.push(call("my_knowledge", {"query": "signing key"}, id="c1"), text("At dawn; every ninety days."))
        res = post_stream(c, "/api/llm/chat", {"message": "When does the vault open, and the key?",
                                               "attachments": [sent], "knowledgeIds": [kb]})
        assert res.text == "At dawn; every ninety days.", res.body
    asked = json.dumps(fake_model.requests[0]["messages"][-1], ensure_ascii=False)
    assert "plan.pdf" in asked and "The vault opens at dawn." in asked
    (output,) = [c["output"] for c in res.of("tool-output-available") if c["toolCallId"] == "c1"]
    assert [(r["fileName"], "ninety days" in r["text"]) for r in output["data"]["results"]] == [("keys.docx", True)]


def ready(client: ApiClient, name: str, data: bytes, media_type: str) -> str:
    """Upload a file and wait until the server has read it; its id."""
    body = client.ok("POST", "/api/files", files={"file": (name, data, media_type)}, status=201)
    row = wait_for(lambda: (r := client.ok("GET", f"/api/files/{body['id']}"))["status"] != "processing" and r)
    assert row["status"] == "ready", row
    return body["id"]
