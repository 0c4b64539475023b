"""An a2a-sdk client against ``/a2a/{slug}/``: streaming, the finished task, ownership, storage."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from a2a.client import A2AClientError
from a2a.types import TaskState
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError

from tests.a2a import a2a_client as ac
from tests.a2a.conftest import CALLEE_PROMPT, callee_step
from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp


@pytest.fixture
def coder(make_agent: Callable[..., dict[str, Any]]) -> dict[str, Any]:
    return make_agent("coder", CALLEE_PROMPT, name="Coder", a2aCallable=True)


def test_stream_reply_then_get_task(app: LiveApp, coder: dict[str, Any], token: str, fake_model: FakeModel) -> None:
    fake_model.push(callee_step(Step(text="def add(a, b): return a + b", chunks=5, delay=0.1)))
    events = ac.run(ac.stream(app.url, "coder", token, "write add()"))
    pieces = ac.artifact_text(events)
    assert len(pieces) > 1, "the reply arrives in several artifact chunks, as it streams"
    assert "".join(pieces) == "def add(a, b): return a + b"
    last = events[-1]
    assert last.HasField("status_update") and last.status_update.status.state == TaskState.TASK_STATE_COMPLETED
    task_id = ac.task_id_of(events)

    task = ac.run(ac.get_task(app.url, "coder", token, task_id))
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [[p.text for p in a.parts] for a in task.artifacts] == [["def add(a, b): return a + b"]], \
        "the stored reply is one text part, not one per chunk"
    assert fake_model.requests[-1]["messages"][-1]["content"] == "write add()"
    listed = ac.run(ac.list_tasks(app.url, "coder", token))
    assert [t.id for t in listed] == [task_id]
    assert [t.id for t in ac.run(ac.list_tasks(app.url, "coder", token, task.context_id))] == [task_id]
    assert ac.run(ac.list_tasks(app.url, "coder", token, "another-context")) == []

    # Same persistence as the internal path: both messages, marked as A2A, in a hidden callee session.
    rows = app.sql("SELECT role, content, source, a2a_task_id, caller_agent_id FROM agent_messages "
                   "ORDER BY sort_order")
    assert rows == [("user", "write add()", "a2a", task_id, None),
                    ("assistant", "def add(a, b): return a + b", "a2a", task_id, None)]
    (state, hidden, agent_id), = app.sql("SELECT t.state, s.hidden, t.agent_id FROM a2a_task_sessions t "
                                         "JOIN agent_sessions s ON s.id = t.session_id")
    assert (state, bool(hidden), agent_id) == ("completed", True, coder["id"])


def test_a_fast_reply_goes_out_in_fewer_bigger_chunks(
    app: LiveApp, coder: dict[str, Any], token: str, fake_model: FakeModel
) -> None:
    """Deltas that arrive while the last chunk is on its way are sent together: a model streaming 200
    deltas a second must not cost the client 200 events a second (nor the server 200 task saves)."""
    reply = " ".join(f"w{i}" for i in range(100))
    fake_model.push(callee_step(Step(text=reply, delay=0.005)))
    events = ac.run(ac.stream(app.url, "coder", token, "go"))
    pieces = ac.artifact_text(events)
    assert "".join(pieces) == reply
    assert 1 < len(pieces) <= 34, f"{len(pieces)} chunks for 100 deltas"


def test_blocking_send_message(app: LiveApp, coder: dict[str, Any], token: str, fake_model: FakeModel) -> None:
    """The answer holds the reply as one text part, however many chunks it streamed in (a client that reads
    the first part gets all of it): the SDK answers with the task our store compacted as it saved it."""
    fake_model.push(callee_step(Step(text="a plain answer in words", delay=0.08)))
    events = ac.run(ac.send(app.url, "coder", token, "question"))
    assert len(events) == 1 and events[0].HasField("task")
    task = events[0].task
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert [[p.text for p in a.parts] for a in task.artifacts] == [["a plain answer in words"]]


def test_task_belongs_to_its_creator(
    app: LiveApp, coder: dict[str, Any], token: str, make_user: Callable[..., ApiClient], fake_model: FakeModel
) -> None:
    fake_model.push(callee_step(Step(text="secret")))
    task_id = ac.task_id_of(ac.run(ac.stream(app.url, "coder", token, "hi")))
    bob = make_user("bob")
    other = bob.ok("POST", "/api/auth/tokens", json={"name": "x"})["token"]
    with pytest.raises(TaskNotFoundError):  # another user's task does not exist for them
        ac.run(ac.get_task(app.url, "coder", other, task_id))
    with pytest.raises(A2AClientError):
        ac.run(ac.get_task(app.url, "coder", "alt_not_a_token", task_id))
    assert ac.run(ac.get_task(app.url, "coder", token, task_id)).id == task_id


def test_model_error_fails_the_task(app: LiveApp, coder: dict[str, Any], token: str, fake_model: FakeModel) -> None:
    fake_model.push(callee_step(Step(error_status=400, error_message="model exploded")))
    events = ac.run(ac.stream(app.url, "coder", token, "hi"))
    last = events[-1]
    assert last.status_update.status.state == TaskState.TASK_STATE_FAILED
    assert "model exploded" in last.status_update.status.message.parts[0].text
    assert app.sql("SELECT state FROM a2a_task_sessions") == [("failed",)]


def test_subscribe_and_cancel(app: LiveApp, coder: dict[str, Any], token: str, fake_model: FakeModel) -> None:
    fake_model.push(callee_step(Step(text=" ".join(f"w{i}" for i in range(60)), delay=0.1)))
    seen = ac.run(ac.stream_cancel_and_subscribe(app.url, "coder", token, "long story"))
    assert ac.artifact_text(seen["subscribed"]), "SubscribeToTask follows the running task"
    assert seen["canceled"].status.state == TaskState.TASK_STATE_CANCELED
    assert seen["task"].status.state == TaskState.TASK_STATE_CANCELED
    assert app.sql("SELECT state FROM a2a_task_sessions") == [("canceled",)]
    # The run stopped: far fewer words than scripted were stored, and nothing is still streaming.
    (content, status), = app.sql("SELECT content, status FROM agent_messages WHERE role = 'assistant'")
    assert status != "streaming" and len(content.split()) < 60


def test_text_no_database_can_store_is_refused(
    app: LiveApp, anon: ApiClient, coder: dict[str, Any], token: str, fake_model: FakeModel
) -> None:
    """U+0000 or half a surrogate pair in the client's message: refused as invalid params, with nothing
    created, on both databases (PostgreSQL refused U+0000 in a task's history, SQLite kept it)."""
    with pytest.raises(InvalidParamsError):
        ac.run(ac.stream(app.url, "coder", token, "a\x00b"))
    with pytest.raises(InvalidParamsError):
        ac.run(ac.send(app.url, "coder", token, "a\x00b"))
    headers = {"A2A-Version": "1.0", "Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    for text in ("a\\u0000b", "a\\udfffb"):
        params = f'{{"message": {{"role": "ROLE_USER", "messageId": "m1", "parts": [{{"text": "{text}"}}]}}}}'
        body = f'{{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {params}}}'
        r = anon.post("/a2a/coder/", content=body.encode(), headers=headers)
        assert r.status_code == 200 and r.json()["error"]["code"] == -32602, (text, r.text)
        rest = anon.post("/a2a/coder/rest/message:send", content=params.encode(), headers=headers)
        assert rest.status_code in (400, 422), (text, rest.status_code, rest.text)
    assert app.sql("SELECT count(*) FROM a2a_task_sessions") == [(0,)]
    assert fake_model.requests == []
