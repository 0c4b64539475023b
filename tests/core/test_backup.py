"""``agentloft backup`` while the server writes, and ``agentloft restore`` into a new data dir: the new
server serves the same chat sessions, documents and files, and decrypts the stored secrets. Run as the
commands run (a subprocess on the server's data dir and database), on SQLite and, in the PostgreSQL
pass, with ``pg_dump``/``pg_restore``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from tests.chat.helpers import chat, make_agent
from tests.fakes.openai_server import FakeModel, text
from tests.pg import database as pg
from tests.support import ApiClient, LiveApp, start_app

DOCS = "/api/agent-documents"


def _cli(*args: str, data_dir: Path, **settings: str) -> subprocess.CompletedProcess[str]:
    """``agentloft ARGS`` on ``data_dir``, with ``settings`` as more ``AGENTLOFT_*`` variables."""
    env = {k: v for k, v in os.environ.items() if k not in ("AGENTLOFT_DATABASE_URL", "AGENTLOFT_FILE_STORE")}
    env.update(AGENTLOFT_DATA_DIR=str(data_dir), AGENTLOFT_SECRET_KEY="test-secret-key",
               **{f"AGENTLOFT_{name.upper()}": value for name, value in settings.items()})
    if pg.current is not None:
        env["AGENTLOFT_DATABASE_URL"] = pg.current.for_dir(data_dir, empty=True)
    return subprocess.run([sys.executable, "-m", "agentloft.cli", *args], env=env, capture_output=True,
                          text=True, timeout=120)


def _listing(client: ApiClient) -> dict[str, Any]:
    sessions = client.ok("GET", "/api/agent-sessions")["items"]
    return {
        "sessions": sorted((s["id"], s["title"]) for s in sessions),
        "messages": {s["id"]: [m["content"] for m in client.ok("GET", f"/api/agent-sessions/{s['id']}")["messages"]]
                     for s in sessions},
        "files": sorted((f["id"], f["name"], f["size"]) for f in client.ok("GET", "/api/files")["items"]),
    }


def test_a_backup_taken_during_writes_restores_into_a_new_server(
    app: LiveApp, admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel, tmp_path: Path,
) -> None:
    make_agent(admin, "helper", modelId=model_id)
    admin.ok("PUT", f"/api/admin/models/{model_id}", json={"apiKey": "sk-kept-encrypted"})
    fake_model.push(text("a reply worth keeping"))
    assert chat(user, "helper", "remember this").text == "a reply worth keeping"
    made = user.ok("POST", "/api/files", files={"file": ("notes.md", "# 标题\nsome notes\n".encode(), "text/plain")},
                   status=201)
    before = _listing(user)

    stop = threading.Event()
    written: list[str] = []

    def write() -> None:  # documents keep arriving while the backup is taken
        while not stop.is_set():
            written.append(user.ok("POST", DOCS, json={"title": f"doc {len(written)}", "content": "x" * 2000},
                                   status=201)["id"])

    writer = threading.Thread(target=write)
    writer.start()
    try:
        done = _cli("backup", str(tmp_path / "backup"), data_dir=app.data_dir)
    finally:
        stop.set()
        writer.join()
    assert done.returncode == 0, done.stdout + done.stderr
    assert written, "the writer never wrote while the backup ran"
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert manifest["database"] == ("postgresql" if pg.current else "sqlite") and manifest["files"] >= 1
    assert (tmp_path / "backup").stat().st_mode & 0o077 == 0  # it holds the secret key

    restored_dir = tmp_path / "restored"
    done = _cli("restore", str(tmp_path / "backup"), data_dir=restored_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    again = _cli("restore", str(tmp_path / "backup"), data_dir=restored_dir)
    assert again.returncode == 2 and "empty" in again.stderr, again.stderr  # never merges into a used one

    app.stop()
    restored = start_app(restored_dir)
    try:
        same = restored.client()
        same.ok("POST", "/api/auth/login", json={"username": "alice", "password": "password123"})
        assert _listing(same) == before
        assert same.get(f"/api/files/{made['id']}/content").content == "# 标题\nsome notes\n".encode()
        docs = {row[0] for row in restored.sql("SELECT id FROM agent_documents")}
        assert docs <= set(written) and set(written[: len(docs)]) == docs  # one moment: the first n writes
        fake_model.push(text("still answering"))
        assert chat(same, "helper", "and now?").text == "still answering"  # the model's key decrypts
    finally:
        restored.stop()
