"""A worker told to stop (SIGTERM) beside another, on one PostgreSQL and one Redis: the reply it writes is
interrupted at the end of its grace window, a follower on the other worker sees the interruption and the
end of the stream, and the session takes its next message on the other worker at once (the lease was
given back; nobody had to wait for it to run out). The one-process case: ``tests/core/test_cli_serve.py``.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import redis_db
from tests.chat.helpers import of_type, parse_sse, text_of, types_of
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, text
from tests.pg import database as pg
from tests.scale.processes import Reader, Worker, first_admin
from tests.support import ApiClient

GRACE_S = 3


@pytest.fixture
def pair(tmp_path: Path, template_db: Path) -> Iterator[tuple[Worker, Worker]]:
    """Two workers on the test's database and Redis prefix; the first with a short grace window."""
    assert pg.current is not None and pg.current.main and redis_db.current
    shared = {"AGENTLOFT_DATABASE_URL": pg.current.main, "AGENTLOFT_REDIS_URL": redis_db.server_url() or "",
              "AGENTLOFT_REDIS_PREFIX": redis_db.current}
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = Worker(tmp_path / "a", {**shared, "AGENTLOFT_SHUTDOWN_GRACE_SECONDS": str(GRACE_S)}).start()
    b = Worker(tmp_path / "b", shared).start()
    yield a.wait(), b.wait()
    a.stop()
    b.stop()


def test_a_stopping_worker_interrupts_its_reply_and_frees_the_session_for_the_others(
    pair: tuple[Worker, Worker], fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    a, b = pair
    on_a = first_admin(a.url, fake_model_server.base_url)
    on_b = ApiClient(b.url, cookies=on_a.cookies)
    words = " ".join(f"w{i}" for i in range(600))
    fake_model.push(Step(text=words, delay=0.1))

    sender = Reader(on_a, "POST", "/api/agents/helper/chat", {"message": "a long story"})
    sender.start()
    assert sender.text_seen.wait(30)
    follower = Reader(on_b, "GET", f"/api/agent-sessions/{sender.session_id}/stream", enough=1)
    follower.start()
    assert follower.text_seen.wait(30)
    assert a.proc is not None
    os.kill(a.proc.pid, signal.SIGTERM)

    a.proc.wait(GRACE_S + 30)  # it finished
    for reader in (sender, follower):
        reader.join(15)
        assert not reader.is_alive() and not reader.broken, a.log()
        assert types_of(reader.chunks)[-3:] == ["data-error", "error", "[DONE]"]
        failure = of_type(reader.chunks, "data-error")[-1]["data"]
        assert failure["code"] == "interrupted" and len(failure["requestId"]) == 32  # the starting request's
    detail = on_b.ok("GET", f"/api/agent-sessions/{sender.session_id}")
    reply = detail["messages"][-1]
    assert reply["status"] == "interrupted" and "server shut down" in reply["error"]
    assert reply["content"] == text_of(follower.chunks) and words.startswith(reply["content"]) and reply["content"]
    assert detail["status"] == "idle" and detail["active"] is False

    fake_model.push(text("picked up"))
    again = on_b.post("/api/agents/helper/chat", json={"message": "go on", "sessionId": sender.session_id})
    assert text_of(parse_sse(again.text)) == "picked up"
