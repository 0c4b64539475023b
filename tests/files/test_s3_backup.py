"""``agentloft backup`` of an instance whose files live in an S3-compatible bucket (moto's server, as in
``test_s3_store``) while files keep being uploaded, and ``agentloft restore`` into a new bucket and into a
data dir without one: a new server serves every file the database copy names, byte for byte. A backup
missing an object, and a bucket prefix already in use, are refused before anything is written."""

from __future__ import annotations

import json
import os
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.core.test_backup import _cli
from tests.files.conftest import BUCKET
from tests.support import ApiClient, LiveApp, start_app

BIG = 3 * 1024 * 1024  # more than one chunk of the backup's streaming


def _upload(client: ApiClient, name: str, size: int) -> tuple[str, bytes]:
    data = os.urandom(size // 2).hex().encode()
    body = client.ok("POST", "/api/files", files={"file": (name, data, "text/plain")}, status=201)
    return body["id"], data


@pytest.fixture
def source(s3_env: str) -> str:
    return f"s3://{BUCKET}/{uuid.uuid4().hex}"


@pytest.fixture
def app(tmp_path: Path, template_db: Path, source: str) -> Iterator[LiveApp]:
    live = start_app(tmp_path / "data", template_db, file_store=source)
    yield live
    live.stop()


def _serves(app: LiveApp, uploaded: dict[str, bytes]) -> list[str]:
    """The files the restored database holds, each checked to download through the API with the bytes that
    were uploaded."""
    listed = sorted(row[0] for row in app.sql("SELECT id FROM files"))
    with app.client() as c:
        c.ok("POST", "/api/auth/login", json={"username": "alice", "password": "password123"})
        assert c.ok("GET", "/api/files")["total"] == len(listed)
        for file_id in listed:
            assert c.get(f"/api/files/{file_id}/content").content == uploaded[file_id], file_id
    return listed


def test_a_backup_during_uploads_restores_the_bucket_s_files(
    app: LiveApp, user: ApiClient, source: str, s3_env: str, tmp_path: Path,
) -> None:
    uploaded = dict([_upload(user, "big.txt", BIG), _upload(user, "small.txt", 64)])
    stop = threading.Event()

    def write() -> None:  # files keep arriving while the backup is taken
        while not stop.is_set():
            file_id, data = _upload(user, f"during-{len(uploaded)}.txt", 2048)
            uploaded[file_id] = data

    writer = threading.Thread(target=write)
    writer.start()
    try:
        done = _cli("backup", str(tmp_path / "backup"), data_dir=app.data_dir, file_store=source)
    finally:
        stop.set()
        writer.join()
    assert done.returncode == 0, done.stdout + done.stderr
    assert len(uploaded) > 2, "no upload happened while the backup ran"
    copies = [p for p in (tmp_path / "backup" / "files-s3").rglob("*") if p.is_file()]
    manifest = json.loads((tmp_path / "backup" / "manifest.json").read_text())
    assert manifest["s3Objects"] == {"count": len(copies), "bytes": sum(p.stat().st_size for p in copies)}
    assert not list((tmp_path / "backup" / "files-s3").rglob(".*"))  # no partial download left behind
    app.stop()

    httpx.put(f"{s3_env}/agentloft-restored").raise_for_status()
    target = "s3://agentloft-restored/files"
    done = _cli("restore", str(tmp_path / "backup"), data_dir=tmp_path / "into-bucket", file_store=target)
    assert done.returncode == 0, done.stdout + done.stderr
    restored = start_app(tmp_path / "into-bucket", file_store=target)
    try:
        listed = _serves(restored, uploaded)
    finally:
        restored.stop()
    assert {uploaded_id for uploaded_id in list(uploaded)[:2]} <= set(listed)  # those made before it began
    assert not (tmp_path / "into-bucket" / "files").exists()

    done = _cli("restore", str(tmp_path / "backup"), data_dir=tmp_path / "into-dir")  # no bucket configured
    assert done.returncode == 0, done.stdout + done.stderr
    restored = start_app(tmp_path / "into-dir")
    try:
        assert _serves(restored, uploaded) == listed
    finally:
        restored.stop()


def test_a_backup_or_restore_that_cannot_finish_writes_nothing(
    app: LiveApp, user: ApiClient, source: str, s3_env: str, tmp_path: Path,
) -> None:
    _upload(user, "a.txt", 64)
    done = _cli("backup", str(tmp_path / "backup"), data_dir=app.data_dir, file_store=source)
    assert done.returncode == 0, done.stdout + done.stderr

    used = _cli("restore", str(tmp_path / "backup"), data_dir=tmp_path / "used", file_store=source)
    assert used.returncode == 2 and f"objects in {source}" in used.stderr, used.stderr
    assert not (tmp_path / "used" / "agentloft.db").exists()

    lost = _cli("backup", str(tmp_path / "lost"), data_dir=app.data_dir, file_store="s3://agentloft-no-such/x")
    assert lost.returncode == 2 and "s3://agentloft-no-such/x: " in lost.stderr, lost.stderr
    assert not (tmp_path / "lost").exists()  # nothing half-written: the same command can be run again

    gone = _cli("restore", str(tmp_path / "backup"), data_dir=tmp_path / "gone", file_store="s3://agentloft-no-such/x")
    assert gone.returncode == 2 and "s3://agentloft-no-such/x: " in gone.stderr, gone.stderr
    assert "Traceback" not in gone.stderr and not (tmp_path / "gone" / "agentloft.db").exists()

    next(p for p in (tmp_path / "backup" / "files-s3").rglob("*") if p.is_file()).unlink()
    httpx.put(f"{s3_env}/agentloft-untouched").raise_for_status()
    cut = _cli("restore", str(tmp_path / "backup"), data_dir=tmp_path / "cut", file_store="s3://agentloft-untouched/x")
    assert cut.returncode == 2 and "incomplete" in cut.stderr, cut.stderr
    assert not (tmp_path / "cut" / "agentloft.db").exists()
    assert "<Key>" not in httpx.get(f"{s3_env}/agentloft-untouched?list-type=2").text


def test_a_data_dir_s_backup_restores_into_a_bucket(
    tmp_path: Path, template_db: Path, s3_env: str,
) -> None:
    """The keys are the same in both stores, so a restore also moves an instance's files into a bucket."""
    live = start_app(tmp_path / "data", template_db)
    try:
        with live.client() as c:
            c.ok("POST", "/api/auth/signup", json={"username": "alice", "password": "password123"})
            uploaded = dict([_upload(c, "a.txt", 4096)])
        done = _cli("backup", str(tmp_path / "backup"), data_dir=live.data_dir)
        assert done.returncode == 0, done.stdout + done.stderr
    finally:
        live.stop()
    target = f"s3://{BUCKET}/{uuid.uuid4().hex}"
    done = _cli("restore", str(tmp_path / "backup"), data_dir=tmp_path / "into-bucket", file_store=target)
    assert done.returncode == 0, done.stdout + done.stderr
    restored = start_app(tmp_path / "into-bucket", file_store=target)
    try:
        assert _serves(restored, uploaded) == list(uploaded)
    finally:
        restored.stop()
    assert not (tmp_path / "into-bucket" / "files").exists()
