"""Documents through the API: an upload answers ``processing``, the ``file.extract`` job reads it in the
sandbox and ends it ``ready`` (its text in the store) or ``failed`` with the reason; a file deleted while
being read stays deleted; a job left by a killed worker is taken over; without a sandbox, documents are
refused at upload while text keeps working."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from agentloft.core.db import utcnow
from agentloft.files import reasons
from agentloft.web import i18n
from tests.files import samples
from tests.files.test_api import BASE, error_code, upload
from tests.files.test_extract import SLOW_HTML
from tests.support import ApiClient, LiveApp, running_app


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    """Jobs queued by another process (or left by a dead one) are found within a tenth of a second."""
    yield from running_app(tmp_path, template_db, job_poll_seconds=0.1, job_lease_seconds=1.0)


def settled(client: ApiClient, file_id: str, limit_s: float = 30.0) -> dict[str, Any]:
    """The file once it is no longer ``processing``."""
    deadline = time.monotonic() + limit_s
    while True:
        body = client.ok("GET", f"{BASE}/{file_id}")
        if body["status"] != "processing":
            return body
        assert time.monotonic() < deadline, f"still processing after {limit_s} s"
        time.sleep(0.02)


def job_of(app: LiveApp, file_id: str) -> tuple[Any, ...]:
    rows = [r for r in app.sql("SELECT id, status, attempts, payload FROM jobs WHERE kind = 'file.extract'")
            if (json.loads(r[3]) if isinstance(r[3], str) else r[3])["fileId"] == file_id]
    assert len(rows) == 1
    return rows[0]


def finished_job(app: LiveApp, file_id: str, limit_s: float = 10.0) -> tuple[Any, ...]:
    """The file's job once it has ended. The job ends the file (ready or failed) and then the queue marks the
    job itself done, in a transaction of its own, so a file already settled may have a job still running."""
    deadline = time.monotonic() + limit_s
    while (job := job_of(app, file_id))[1] in ("queued", "running"):
        assert time.monotonic() < deadline, f"job still {job[1]} after {limit_s} s"
        time.sleep(0.02)
    return job


def text_object(app: LiveApp, user: ApiClient, file_id: str) -> Path:
    return app.data_dir / "files" / str(user.ok("GET", "/api/auth/me")["id"]) / f"{file_id}.text.json"


@pytest.mark.parametrize(("name", "data", "pages", "says"), [
    ("report.pdf", samples.pdf("alpha beta", "gamma"), 2, "gamma"),
    ("report.docx", samples.docx(), None, "## Details"),
    ("deck.pptx", samples.pptx(), 2, "# Roadmap"),
    ("book.xlsx", samples.xlsx(), 2, "# Sales"),
    ("page.html", b"<html><body><h1>Hello</h1><script>x()</script></body></html>", None, "# Hello"),
])
def test_a_document_is_processing_then_ready_with_its_text(
        app: LiveApp, user: ApiClient, name: str, data: bytes, pages: int | None, says: str) -> None:
    body = upload(user, name, data)
    assert (body["status"], body["chars"], body["pages"], body["error"]) == ("processing", None, None, None)
    done = settled(user, body["id"])
    stored = json.loads(text_object(app, user, body["id"]).read_text())
    text = "".join(p["text"] for p in stored["pages"])
    assert (done["status"], done["error"], done["pages"]) == ("ready", None, pages)
    assert done["chars"] == len(text) and says in text
    assert finished_job(app, body["id"])[1:3] == ("done", 1)


@pytest.mark.parametrize(("name", "data", "error", "code"), [
    ("secret.pdf", samples.encrypted_pdf(), "encrypted with a password; upload a copy without the password",
     "encrypted"),
    ("broken.pdf", b"%PDF-1.7\n" + bytes(range(256)) * 8, "damaged or not a PDF", "damaged"),
    ("bomb.docx", samples.zip_bomb(samples.docx(), "word/media/bomb.bin", 64 << 20), "expands too much",
     "expands_too_much"),
])
def test_a_file_that_cannot_be_read_ends_failed_with_the_reason(
        app: LiveApp, user: ApiClient, name: str, data: bytes, error: str, code: str) -> None:
    body = upload(user, name, data)
    assert body["errorCode"] is None
    done = settled(user, body["id"])
    assert done["status"] == "failed" and done["error"].startswith(error) and done["errorCode"] == code
    assert (done["chars"], done["pages"]) == (None, None)
    assert not text_object(app, user, body["id"]).exists()
    assert finished_job(app, body["id"])[1:3] == ("done", 1)  # not retried: it would end the same way
    # its bytes can still be downloaded and it can be deleted
    assert user.get(f"{BASE}/{body['id']}/content").content == data
    assert user.delete(f"{BASE}/{body['id']}").status_code == 204


def test_a_file_deleted_while_it_is_read_stays_deleted(app: LiveApp, user: ApiClient) -> None:
    body = upload(user, "slow.html", SLOW_HTML)
    deadline = time.monotonic() + 10
    while job_of(app, body["id"])[1] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert user.delete(f"{BASE}/{body['id']}").status_code == 204
    deadline = time.monotonic() + 30
    while job_of(app, body["id"])[1] == "running":
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert app.sql("SELECT count(*) FROM files") == [(0,)]
    assert not text_object(app, user, body["id"]).exists()
    assert user.get(f"{BASE}/{body['id']}").status_code == 404


def test_the_job_of_a_killed_worker_is_taken_over(app: LiveApp, user: ApiClient) -> None:
    """As a worker killed half-way leaves it: the file ``processing`` with no text, its job ``running``
    under a lease that ran out. Another worker (here, this app's runner) reads it again."""
    body = upload(user, "report.pdf", samples.pdf("read twice"))
    assert settled(user, body["id"])["status"] == "ready"
    text_object(app, user, body["id"]).unlink()
    app.sql("UPDATE files SET status = 'processing', chars = NULL, pages = NULL WHERE id = ?", (body["id"],))
    job_id = finished_job(app, body["id"])[0]
    app.sql("UPDATE jobs SET status = 'running', lease_owner = 'dead:1:worker', lease_until = ? WHERE id = ?",
            (app.stamp(utcnow() - timedelta(seconds=1)), job_id))
    done = settled(user, body["id"])
    assert (done["status"], done["pages"]) == ("ready", 1)
    assert "read twice" in text_object(app, user, body["id"]).read_text()
    assert finished_job(app, body["id"])[1:3] == ("done", 2)


def test_without_a_sandbox_documents_are_refused_and_text_still_works(tmp_path: Path, template_db: Path) -> None:
    for live in running_app(tmp_path, template_db, extract_sandbox_user="agentloft-nobody"):
        with live.client() as client:
            client.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
            resp = client.post(BASE, files={"file": ("report.pdf", samples.pdf("words"))})
            assert resp.status_code == 503 and error_code(resp) == "file_extraction_unavailable", resp.text
            assert resp.json()["error"]["message"].startswith(
                "the sandbox that reads documents is unavailable, so this PDF was not kept: the sandbox user "
                "'agentloft-nobody' does not exist")
            assert client.ok("GET", BASE)["total"] == 0  # nothing kept
            assert upload(client, "notes.txt", b"plain words")["status"] == "ready"


def test_every_reason_code_has_words_in_both_languages() -> None:
    for lang in ("en", "zh-CN"):
        strings = i18n.catalog(lang)
        assert {c for c in reasons.CODES if f"fileError.{c}" not in strings} == set(), lang
    assert reasons.error_code("reading it kept failing: RuntimeError") == reasons.UNREADABLE
    assert reasons.error_code(None) is None
