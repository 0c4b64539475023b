"""Real ``agentloft serve`` processes sharing one PostgreSQL database and one Redis prefix.

One scenario, because every process takes seconds to start on a busy machine:
- worker B runs a long turn; worker C starts beside it (a rolling deploy) and leaves it alone;
- worker A runs a turn that B follows; A is killed with SIGKILL; within 15 s B's stream ends with an
  error, the reply is interrupted with its checkpointed text kept, and the session takes a new turn;
- the long turn on B is stopped through C.
Then: ``serve --workers 2`` on one port, concurrent ``db upgrade``, and a process without Redis refused.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from agentloft.core import migrate
from tests import redis_db
from tests.chat.helpers import parse_sse, text_of, types_of
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, text
from tests.pg import database as pg
from tests.scale.processes import Reader, Worker, first_admin
from tests.support import ApiClient


def _shared_env() -> dict[str, str]:
    assert pg.current is not None and pg.current.main and redis_db.current
    return {"AGENTLOFT_DATABASE_URL": pg.current.main, "AGENTLOFT_REDIS_URL": redis_db.server_url() or "",
            "AGENTLOFT_REDIS_PREFIX": redis_db.current}


@pytest.fixture
def workers(tmp_path: Path, template_db: Path) -> Iterator[list[Worker]]:
    """Started by the test (so they start side by side); stopped, or killed, afterwards."""
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def _worker(started: list[Worker], tmp_path: Path, name: str, processes: int = 1, **env: str) -> Worker:
    (tmp_path / name).mkdir(exist_ok=True)
    worker = Worker(tmp_path / name, {**_shared_env(), **env}, workers=processes).start()
    started.append(worker)
    return worker


def _reply(client: ApiClient, session_id: str) -> dict[str, Any]:
    return dict(client.ok("GET", f"/api/agent-sessions/{session_id}")["messages"][-1])


def test_a_killed_worker_is_taken_over_and_a_starting_one_leaves_live_turns_alone(
    tmp_path: Path, workers: list[Worker], fake_model_server: FakeModelServer, fake_model: FakeModel,
) -> None:
    a, b = _worker(workers, tmp_path, "a").wait(), _worker(workers, tmp_path, "b").wait()
    admin_a = first_admin(a.url, fake_model_server.base_url)
    admin_b = ApiClient(b.url, cookies=admin_a.cookies)

    # A long turn on B, then C starting beside it
    long_words = " ".join(f"x{i}" for i in range(600))
    fake_model.push(Step(text=long_words, delay=0.1))
    on_b = Reader(admin_b, "POST", "/api/agents/helper/chat", {"message": "a very long story"})
    on_b.start()
    assert on_b.text_seen.wait(30)
    c = _worker(workers, tmp_path, "c")

    # A turn on A, followed from B, and A killed mid-reply
    words = " ".join(f"w{i}" for i in range(300))
    fake_model.push(Step(text=words, delay=0.05))
    on_a = Reader(admin_a, "POST", "/api/agents/helper/chat", {"message": "tell me"})
    on_a.start()
    assert on_a.text_seen.wait(30)
    session_id = on_a.session_id
    assert session_id
    time.sleep(1.2)  # the reply streams on; a checkpoint is at most a second behind
    follower = Reader(admin_b, "GET", f"/api/agent-sessions/{session_id}/stream")
    follower.start()
    assert follower.text_seen.wait(30)
    a.kill()
    killed_at = time.monotonic()
    on_a.join(10)
    assert on_a.broken, "the browser on A lost its connection"
    follower.join(30)
    assert not follower.is_alive(), "the follower's stream ended"
    assert follower.ended_at - killed_at < 15, f"ended {follower.ended_at - killed_at:.1f} s after the kill"
    chunks = follower.chunks
    assert types_of(chunks)[0] == "start" and types_of(chunks)[-2:] == ["error", "[DONE]"]
    assert "server stopped" in chunks[-2]["errorText"]
    reply = _reply(admin_b, session_id)
    assert reply["status"] == "interrupted" and "server stopped" in reply["error"]
    kept, streamed = reply["content"], text_of(chunks)
    assert kept and words.startswith(kept) and len(kept.split()) >= 20, "the checkpointed text is kept"
    assert streamed.startswith(kept)
    detail = admin_b.ok("GET", f"/api/agent-sessions/{session_id}")
    assert detail["status"] == "idle" and detail["active"] is False
    fake_model.push(text("picked up"))
    again = admin_b.post("/api/agents/helper/chat", json={"message": "still there?", "sessionId": session_id})
    assert text_of(parse_sse(again.text)) == "picked up"

    # C is up (its start-up sweep ran in the meantime) and left B's turn alone; C stops it
    c.wait()
    time.sleep(3)  # the sweep at start takes a second look one heartbeat later
    admin_c = ApiClient(c.url, cookies=admin_a.cookies)
    long_id = on_b.session_id
    assert long_id and on_b.is_alive(), "B's turn is still streaming"
    assert _reply(admin_c, long_id)["status"] == "streaming"
    assert admin_c.ok("POST", f"/api/agent-sessions/{long_id}/stop") == {"stopped": True}
    on_b.join(15)
    assert types_of(on_b.chunks)[-2:] == ["abort", "[DONE]"]
    stopped = _reply(admin_c, long_id)
    assert stopped["status"] == "stopped" and long_words.startswith(stopped["content"])


def test_serve_workers_runs_several_processes_on_one_port(
    tmp_path: Path, workers: list[Worker], fake_model_server: FakeModelServer, fake_model: FakeModel,
) -> None:
    stale = tmp_path / "many" / "metrics" / "counter_1.db"  # what an earlier run's workers left
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"not a metrics file")
    served = _worker(workers, tmp_path, "many", processes=2, AGENTLOFT_METRICS="true").wait()
    assert not stale.exists()
    client = first_admin(served.url, fake_model_server.base_url)
    assert pg.current is not None and pg.current.main

    def registered() -> list[tuple[Any, ...]]:
        return pg.query(pg.current.main or "", "SELECT pid, shared FROM worker_processes")

    deadline = time.monotonic() + 60
    while len(registered()) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    rows = registered()
    assert len(rows) == 2 and len({pid for pid, _ in rows}) == 2 and all(shared for _, shared in rows)
    assert served.proc is not None and served.proc.pid not in {pid for pid, _ in rows}
    for i in range(4):
        fake_model.push(text(f"answer {i}"))
        assert text_of(parse_sse(client.post("/api/agents/helper/chat", json={"message": "q"}).text)) == f"answer {i}"
    _a_scrape_sums_both_workers(served, tmp_path / "many" / "metrics", {pid for pid, _ in rows})


def _health_counts(directory: Path, pids: set[int]) -> dict[int, float]:
    """``GET /api/health`` as each worker counted it, read from its own files alone."""
    counts = {}
    for pid in pids:
        alone = directory.parent / f"metrics-of-{pid}"
        shutil.rmtree(alone, ignore_errors=True)
        alone.mkdir()
        for own in directory.glob(f"*_{pid}.db"):
            shutil.copy(own, alone / own.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path=str(alone))
        counts[pid] = registry.get_sample_value(
            "agentloft_http_requests_total", {"method": "GET", "route": "/api/health", "status": "200"}) or 0.0
    return counts


def _a_scrape_sums_both_workers(served: Worker, directory: Path, pids: set[int]) -> None:
    """Requests on new connections until each worker has answered some (the kernel hands connections to
    whichever accepts first); then any worker's scrape counts them all, and all four turns."""
    earlier = sum(_health_counts(directory, pids).values())  # the start-up's checks and the first admin's
    sent = 0
    deadline = time.monotonic() + 60
    while min(_health_counts(directory, pids).values()) == 0 and time.monotonic() < deadline:
        for _ in range(10):
            with ApiClient(served.url) as fresh:
                assert fresh.get("/api/health").status_code == 200
            sent += 1
    while sum(_health_counts(directory, pids).values()) < earlier + sent and time.monotonic() < deadline:
        time.sleep(0.05)  # a request is counted once its response has ended
    counts = _health_counts(directory, pids)
    assert min(counts.values()) > 0 and sum(counts.values()) == earlier + sent, counts
    for _ in range(3):  # whichever worker answers
        with ApiClient(served.url) as scraper:
            page = scraper.get("/metrics").text
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
                   for family in text_string_to_metric_families(page) for s in family.samples}
        health = (("method", "GET"), ("route", "/api/health"), ("status", "200"))
        assert samples[("agentloft_http_requests_total", health)] == earlier + sent
        assert samples[("agentloft_turns_started_total", (("source", "chat"),))] == 4


def test_concurrent_upgrades_do_not_collide(tmp_path: Path) -> None:
    """Each machine of a deploy may run `agentloft db upgrade` at the same moment (separate processes:
    Alembic keeps its migration context in a module global, so it is one upgrade per process anyway)."""
    assert pg.current is not None
    url = pg.current.create(empty=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("AGENTLOFT_")},
           "AGENTLOFT_DATABASE_URL": url, "AGENTLOFT_DATA_DIR": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-m", "agentloft.cli", "db", "upgrade"], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT) for _ in range(3)]
    outputs = [proc.communicate(timeout=300)[0].decode(errors="replace") for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0], outputs
    head = ScriptDirectory.from_config(migrate.alembic_config(url)).get_current_head()
    assert pg.query(url, "SELECT version_num FROM alembic_version") == [(head,)]


def test_a_process_without_redis_is_refused_beside_workers_that_share_one(
    tmp_path: Path, workers: list[Worker]
) -> None:
    _worker(workers, tmp_path, "shared").wait()
    (tmp_path / "alone").mkdir()
    env = {**_shared_env(), "AGENTLOFT_REDIS_URL": ""}
    alone = Worker(tmp_path / "alone", env).start()
    workers.append(alone)
    assert alone.proc is not None and alone.proc.wait(120) == 2
    assert "serves this database" in alone.log() and "AGENTLOFT_REDIS_URL" in alone.log()
