"""``agentloft serve`` told to stop (SIGTERM) while replies stream: a real process, on this pass's database.

Running replies get ``AGENTLOFT_SHUTDOWN_GRACE_SECONDS`` to finish: one that ends within it is saved
complete; one still running then is saved as interrupted with its text so far, and its streams (the
sender's and a follower's) end with the interruption; the process then exits. (Several workers on Redis:
``tests/scale/test_shutdown.py``.)
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chat.helpers import of_type, text_of, types_of
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step
from tests.pg import database as pg
from tests.scale.processes import Reader, Worker, first_admin

GRACE_S = 6
INTERRUPTED = "The server shut down while this reply was being written."


def asks(word: str) -> Callable[[dict[str, Any]], bool]:
    """A fake model step for the request whose last message mentions ``word``."""
    return lambda body: word in json.dumps(body["messages"][-1])


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Worker, str | None]]:
    """A started ``agentloft serve`` with a short grace window, and its PostgreSQL URL (None: SQLite)."""
    data = tmp_path / "serve"
    data.mkdir()
    url = pg.current.for_dir(data, empty=True) if pg.current is not None else None
    env = {"AGENTLOFT_SHUTDOWN_GRACE_SECONDS": str(GRACE_S), **({"AGENTLOFT_DATABASE_URL": url} if url else {})}
    worker = Worker(data, env).start()
    yield worker, url
    worker.stop()


def stored(worker: Worker, url: str | None, session_id: str | None) -> tuple[str, str, str | None]:
    """The session's last reply as saved (the process is gone: read the database itself)."""
    query = ("SELECT status, content, error FROM agent_messages WHERE session_id = ? AND role = 'assistant' "
             "ORDER BY sort_order DESC LIMIT 1")
    if url is not None:
        return pg.query(url, query, (session_id,))[0]
    con = sqlite3.connect(worker.data_dir / "agentloft.db")
    try:
        return con.execute(query, (session_id,)).fetchone()
    finally:
        con.close()


def test_sigterm_lets_replies_finish_within_the_grace_window_then_interrupts_them(
    served: tuple[Worker, str | None], fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    worker, url = served
    worker.wait()
    admin = first_admin(worker.url, fake_model_server.base_url)
    long_words = " ".join(f"w{i}" for i in range(600))  # a minute: still running when the window ends
    short_words = " ".join(f"s{i}" for i in range(30))  # a second and a half: ends within it
    fake_model.push(Step(text=long_words, delay=0.1, match=asks("long")),
                    Step(text=short_words, delay=0.05, match=asks("short")))

    long = Reader(admin, "POST", "/api/agents/helper/chat", {"message": "a long story"})
    long.start()
    assert long.text_seen.wait(30)
    follower = Reader(admin, "GET", f"/api/agent-sessions/{long.session_id}/stream", enough=1)
    follower.start()
    short = Reader(admin, "POST", "/api/agents/helper/chat", {"message": "a short one"}, enough=1)
    short.start()
    assert follower.text_seen.wait(30) and short.text_seen.wait(30)
    assert worker.proc is not None
    os.kill(worker.proc.pid, signal.SIGTERM)

    worker.proc.wait(GRACE_S + 30)  # it finished (cut at the window's end, not at the long reply's)
    for reader in (long, follower, short):
        reader.join(10)
        assert not reader.is_alive() and not reader.broken, worker.log()

    assert types_of(short.chunks)[-2:] == ["finish", "[DONE]"] and text_of(short.chunks) == short_words
    assert stored(worker, url, short.session_id)[:2] == ("complete", short_words)

    for reader in (long, follower):
        assert types_of(reader.chunks)[-3:] == ["data-error", "error", "[DONE]"]
        failure = of_type(reader.chunks, "data-error")[-1]["data"]
        assert failure["code"] == "interrupted" and len(failure["requestId"]) == 32  # the starting request's
        assert of_type(reader.chunks, "error")[-1]["errorText"] == INTERRUPTED
    streamed = text_of(long.chunks)
    assert text_of(follower.chunks) == streamed and long_words.startswith(streamed)
    status, content, error = stored(worker, url, long.session_id)
    assert (status, content, error) == ("interrupted", streamed, INTERRUPTED)
    assert len(content.split()) >= 20 and content != long_words
