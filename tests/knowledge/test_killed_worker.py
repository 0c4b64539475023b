"""A real ``agentloft serve`` process killed (SIGKILL) while a collection's file is still being read: its
sandboxed reader dies with it, the next process on the database takes the ``file.extract`` job over once
its lease runs out (the job counts the two attempts) and reads the file again, and the file's
``knowledge.index`` job, waiting for it, indexes the file there once it is read. One test for both jobs:
each start of real processes costs seconds."""

from __future__ import annotations

import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

from tests.files.test_api import upload
from tests.files.test_extract import SLOW_HTML
from tests.pg import database as pg
from tests.scale.processes import Worker
from tests.support import ApiClient

BASE = "/api/knowledge"


def sql(data_dir: Path, database_url: str | None, query: str) -> list[tuple[Any, ...]]:
    if database_url:
        return pg.query(database_url, query)
    con = sqlite3.connect(data_dir / "agentloft.db")
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def test_a_file_whose_server_was_killed_is_indexed_by_the_next_one(tmp_path: Path, template_db: Path) -> None:
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
            kb = client.ok("POST", BASE, json={"name": "Docs"})["id"]
            assert client.ok("POST", f"{BASE}/{kb}/files", json={"fileId": file_id}, status=202)["status"] == (
                "processing")
        deadline = time.monotonic() + 20
        while ("file.extract", "running") not in sql(data_dir, database_url, "SELECT kind, status FROM jobs"):
            assert time.monotonic() < deadline, first.log()
            time.sleep(0.02)
        first.kill()
    finally:
        first.stop()
    assert sql(data_dir, database_url, "SELECT status FROM knowledge_files") == [("processing",)]
    assert sql(data_dir, database_url, "SELECT status FROM files") == [("processing",)]

    second = Worker(data_dir, env).start().wait()
    try:
        with ApiClient(second.url) as client:
            client.get("/api/health")
            client.ok("POST", "/api/auth/login", json={"username": "admin", "password": "password123"})
            deadline = time.monotonic() + 60
            while (body := client.ok("GET", f"{BASE}/{kb}"))["status"] == "processing":
                assert time.monotonic() < deadline, second.log()
                time.sleep(0.05)
            read = client.ok("GET", f"/api/files/{file_id}")
        assert (read["status"], read["error"]) == ("ready", None) and read["chars"] > 100_000
        extract_jobs = "SELECT status, attempts FROM jobs WHERE kind = 'file.extract'"
        assert sql(data_dir, database_url, extract_jobs) == [("done", 2)]
        (entry,) = body["files"]
        assert (entry["status"], entry["error"]) == ("ready", None) and entry["chunks"] > 10
        assert body["chunkCount"] == entry["chunks"]
        counted = sql(data_dir, database_url, "SELECT count(*) FROM knowledge_chunks")
        assert counted == [(entry["chunks"],)]  # indexed once, nothing left of an earlier try
    finally:
        second.stop()
