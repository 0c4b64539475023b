"""A2A tasks belong to the user who started them: another account, with its own valid token, cannot read,
follow, cancel, continue or list someone else's task by naming its id (or its context's), on either
binding, nor learn that it exists; and a colliding client-chosen id neither hijacks nor breaks the task."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

from tests.a2a import a2a_client as ac
from tests.a2a.conftest import CALLEE_PROMPT, callee_step
from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp

BINDINGS = ("JSONRPC", "HTTP+JSON")
REPLY = " ".join(f"w{i}" for i in range(30))


async def client_for(base: str, hc: httpx.AsyncClient, binding: str, streaming: bool = True) -> Client:
    card = await ac.card(base, "coder")
    config = ClientConfig(streaming=streaming, httpx_client=hc, supported_protocol_bindings=[binding])
    return await create_client(card, client_config=config)


def message(text: str, task_id: str = "", context_id: str = "") -> Message:
    return Message(role=Role.ROLE_USER, message_id=str(uuid.uuid4()), parts=[Part(text=text)], task_id=task_id,
                   context_id=context_id)


async def refused(what: Any) -> None:
    """The call fails as if the task did not exist (a coroutine, or a stream of events)."""
    with pytest.raises(TaskNotFoundError):
        if hasattr(what, "__aiter__"):
            async for _ in what:
                pass
        else:
            await what


async def probe(base: str, token: str, task_id: str, context_id: str) -> list[list[Any]]:
    """Everything another user can try on the task, on both bindings; what listing shows them."""
    listed = []
    async with ac.http(token) as hc:
        for binding in BINDINGS:
            client = await client_for(base, hc, binding)
            await refused(client.get_task(GetTaskRequest(id=task_id)))
            await refused(client.subscribe(SubscribeToTaskRequest(id=task_id)))
            await refused(client.cancel_task(CancelTaskRequest(id=task_id)))
            await refused(client.send_message(SendMessageRequest(message=message("mine now", task_id))))
            await refused(client.send_message(SendMessageRequest(message=message("mine", task_id, context_id))))
            blocking = await client_for(base, hc, binding, streaming=False)
            await refused(blocking.send_message(SendMessageRequest(message=message("again", task_id))))
            listed.append(list((await client.list_tasks(ListTasksRequest(context_id=context_id))).tasks))
            listed.append(list((await client.list_tasks(ListTasksRequest())).tasks))
    return listed


async def run_while_probed(base: str, owner: str, other: str, other_panel: ApiClient) -> dict[str, Any]:
    """The owner streams a slow task; once it is under way the other user tries everything on it."""
    seen: dict[str, Any] = {"events": []}
    first = asyncio.Event()
    async with ac.http(owner) as hc:
        client = await client_for(base, hc, "JSONRPC")

        async def main() -> None:
            async for ev in client.send_message(SendMessageRequest(message=message("tell a long story"))):
                seen["events"].append(ev)
                if ev.HasField("artifact_update"):
                    first.set()

        runner = asyncio.create_task(main())
        await asyncio.wait_for(first.wait(), 20)
        task = await client.get_task(GetTaskRequest(id=ac.task_id_of(seen["events"])))
        seen["listed"] = await probe(base, other, task.id, task.context_id)
        panel = await asyncio.to_thread(other_panel.get, f"/api/agents/a2a/stream?taskId={task.id}")
        seen["panel"] = (panel.status_code, panel.json()["error"]["code"])
        seen["running"] = not runner.done()
        await asyncio.wait_for(runner, 30)
        seen["task"] = await client.get_task(GetTaskRequest(id=task.id))
    return seen


def test_another_user_cannot_touch_a_running_task(
    app: LiveApp, make_agent: Callable[..., dict[str, Any]], token: str, make_user: Callable[..., ApiClient],
    fake_model: FakeModel,
) -> None:
    make_agent("coder", CALLEE_PROMPT, name="Coder", a2aCallable=True)
    bob = make_user("bob")
    other = bob.ok("POST", "/api/auth/tokens", json={"name": "x"})["token"]
    fake_model.push(callee_step(Step(text=REPLY, delay=0.1)))
    seen = ac.run(run_while_probed(app.url, token, other, bob))
    assert seen["running"], "the probes ran while the task was still going"
    assert seen["listed"] == [[], [], [], []]
    assert seen["panel"] == (404, "a2a_task_not_found")
    # The owner's task went on untouched, to the end, and nothing was created for the other user.
    assert "".join(ac.artifact_text(seen["events"])) == REPLY
    assert seen["task"].status.state == TaskState.TASK_STATE_COMPLETED
    assert app.sql("SELECT u.username, t.state FROM a2a_task_sessions t JOIN users u ON u.id = t.user_id") == [
        ("alice", "completed")]
    assert app.sql("SELECT count(*) FROM agent_messages") == [(2,)]
    assert len(fake_model.requests) == 1


async def start_in(base: str, token: str, context_id: str, task_id: str = "") -> list[StreamResponse]:
    async with ac.http(token) as hc:
        client = await client_for(base, hc, "JSONRPC")
        request = SendMessageRequest(message=message("hello", task_id, context_id))
        return [ev async for ev in client.send_message(request)]


async def listed_in(base: str, token: str, context_id: str) -> list[str]:
    return [t.id for t in await ac.list_tasks(base, "coder", token, context_id)]


def test_colliding_ids_neither_hijack_nor_break(
    app: LiveApp, make_agent: Callable[..., dict[str, Any]], token: str, make_user: Callable[..., ApiClient],
    fake_model: FakeModel,
) -> None:
    make_agent("coder", CALLEE_PROMPT, name="Coder", a2aCallable=True)
    other = make_user("bob").ok("POST", "/api/auth/tokens", json={"name": "x"})["token"]
    fake_model.push(callee_step(Step(text="for alice")), callee_step(Step(text="for bob")))
    mine = ac.run(start_in(app.url, token, "shared-context"))
    mine_id = ac.task_id_of(mine)
    # Bob picks Alice's context id for a task of his own: it is his, in his own view of that context.
    theirs = ac.run(start_in(app.url, other, "shared-context"))
    theirs_id = ac.task_id_of(theirs)
    assert theirs_id != mine_id and "".join(ac.artifact_text(theirs)) == "for bob"
    assert ac.run(listed_in(app.url, token, "shared-context")) == [mine_id]
    assert ac.run(listed_in(app.url, other, "shared-context")) == [theirs_id]
    # A task id the client makes up is not a new task: only the server names tasks.
    with pytest.raises(TaskNotFoundError):
        ac.run(start_in(app.url, other, "", task_id=str(uuid.uuid4())))
    # Nor does naming Alice's task id under his own context reach it.
    with pytest.raises(TaskNotFoundError):
        ac.run(start_in(app.url, other, "shared-context", task_id=mine_id))
    assert ac.run(ac.get_task(app.url, "coder", token, mine_id)).status.state == TaskState.TASK_STATE_COMPLETED
    rows = app.sql("SELECT t.id, u.username FROM a2a_task_sessions t JOIN users u ON u.id = t.user_id "
                   "ORDER BY u.username")
    assert rows == [(mine_id, "alice"), (theirs_id, "bob")]
