"""A real ``agentloft serve`` process killed (SIGKILL) while it reads a document: its sandboxed reader dies
with it, and the next process on the database takes the job over once its lease runs out, reads the file
again and ends it ``ready``; the job counts the two attempts."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.files.test_api import BASE, upload
from tests.files.test_extract import SLOW_HTML
from tests.pg import database as pg
from tests.scale.processes import Worker
from tests.support import ApiClient


def sql(data_dir: Path, database_url: str | None, query: str) -> list[tuple[Any, ...]]:
    if database_url:
        return pg.query(database_url, query)
    con = sqlite3.connect(data_dir / "agentloft.db")
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def test_a_document_whose_server_was_killed_is_read_by_the_next_one(tmp_path: Path, template_db: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    env = {"AGENTLOFT_JOB_LEASE_SECONDS": "1", "AGENTLOFT_JOB_POLL_SECONDS": "0.1"}
    database_url = None
    if pg.current is not None:
        database_url = env["AGENTLOFT_DATABASE_URL"] = pg.current.for_dir(data_dir, empty=True)
    else:
        shutil.copy(template_db, data_dir / "agentloft.db")
    first = Worker(data_dir, env).start().wait()
    try:
        with ApiClient(first.url) as client:
            client.get("/api/health")
            client.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
            file_id = upload(client, "slow.html", SLOW_HTML)["id"]
        deadline = time.monotonic() + 20
        while sql(data_dir, database_url, "SELECT status FROM jobs") != [("running",)]:
            assert time.monotonic() < deadline, first.log()
            time.sleep(0.02)
        first.kill()
    finally:
        first.stop()
    assert sql(data_dir, database_url, "SELECT status FROM files") == [("processing",)]

    second = Worker(data_dir, env).start().wait()
    try:
        with ApiClient(second.url) as client:
            client.get("/api/health")
            client.ok("POST", "/api/auth/login", json={"username": "admin", "password": "password123"})
            deadline = time.monotonic() + 60
            while (body := client.ok("GET", f"{BASE}/{file_id}"))["status"] == "processing":
                assert time.monotonic() < deadline, second.log()
                time.sleep(0.05)
        assert (body["status"], body["error"]) == ("ready", None) and body["chars"] > 100_000
        assert sql(data_dir, database_url, "SELECT status, attempts FROM jobs") == [("done", 2)]
    finally:
        second.stop()
