"""Any request on any worker: two workers (``app`` and ``twin``) share PostgreSQL and Redis, and a chat or
an A2A task started on one is followed, stopped, approved and cancelled through the other."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from a2a.client import ClientConfig, create_client
from a2a.types import CancelTaskRequest, GetTaskRequest, SendMessageRequest, SubscribeToTaskRequest, TaskState

from tests.a2a import a2a_client as ac
from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step
from tests.chat.helpers import attach, chat, make_agent, make_tool, parse_sse, register_test_tools, text_of, types_of
from tests.fakes.openai_server import FakeModel, Step, ToolCall, call, text
from tests.scale.conftest import on
from tests.support import ApiClient, LiveApp, start_app

LONG = " ".join(f"w{i}" for i in range(200))


class Follower(threading.Thread):
    """Reads a whole SSE response in the background; ``started`` is set once some text has arrived."""

    def __init__(self, client: ApiClient, url: str) -> None:
        super().__init__(daemon=True)
        self.client, self.url = client, url
        self.started = threading.Event()
        self.body = ""
        self.status = 0

    def run(self) -> None:
        with self.client.stream("GET", self.url) as resp:
            self.status = resp.status_code
            for line in resp.iter_lines():
                self.body += line + "\n"
                if '"text-delta"' in line:
                    self.started.set()
        self.started.set()


def _read_until_text(lines: Any, count: int) -> None:
    seen = 0
    for line in lines:
        seen += '"text-delta"' in line
        if seen >= count:
            return


@pytest.fixture
def helper(admin: ApiClient, model_id: int) -> dict[str, Any]:
    return make_agent(admin, "helper", modelId=model_id, maxSteps=5)


def test_a_chat_on_one_worker_is_followed_and_stopped_through_the_other(
    app: LiveApp, twin: LiveApp, user: ApiClient, helper: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=LONG, delay=0.05))
    user_b = on(twin, user)
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "a long story"}) as resp:
        session_id = resp.headers["x-session-id"]
        lines = resp.iter_lines()
        _read_until_text(lines, 3)
        assert user_b.ok("GET", f"/api/agent-sessions/{session_id}")["active"] is True
        follower = Follower(user_b, f"/api/agent-sessions/{session_id}/stream")
        follower.start()
        assert follower.started.wait(10)
        assert user_b.ok("POST", f"/api/agent-sessions/{session_id}/stop") == {"stopped": True}
        rest = "\n".join(lines)
    follower.join(10)
    assert not follower.is_alive(), "the follower's stream ends with the run"
    assert '"type":"abort"' in rest.replace(" ", "")
    followed = parse_sse(follower.body.replace("\n\n\n", "\n\n"))
    assert types_of(followed)[0] == "start", "the follower got the run from its start"
    assert types_of(followed)[-2:] == ["abort", "[DONE]"]
    status, content = app.sql("SELECT status, content FROM agent_messages WHERE session_id = ? AND "
                              "role = 'assistant'", (session_id,))[0]
    assert status == "stopped" and LONG.startswith(content) and content.startswith("w0 w1 w2")
    assert text_of(followed) == content
    assert user_b.ok("GET", f"/api/agent-sessions/{session_id}")["active"] is False


def test_a_chat_deleted_through_the_other_worker_stops_there(
    app: LiveApp, twin: LiveApp, user: ApiClient, helper: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(text=LONG, delay=0.05))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "a long story"}) as resp:
        session_id = resp.headers["x-session-id"]
        lines = resp.iter_lines()
        _read_until_text(lines, 3)
        assert on(twin, user).delete(f"/api/agent-sessions/{session_id}").status_code == 204
        rest = "\n".join(lines)
    assert '"type":"abort"' in rest.replace(" ", ""), "the run on the first worker was stopped"
    status, content = app.sql("SELECT status, content FROM agent_messages WHERE session_id = ? AND "
                              "role = 'assistant'", (session_id,))[0]
    assert status == "stopped" and LONG.startswith(content) and len(content) < len(LONG)


def test_a_regenerated_reply_is_stopped_through_the_other_worker(
    app: LiveApp, twin: LiveApp, user: ApiClient, helper: dict[str, Any], fake_model: FakeModel
) -> None:
    """Regenerate (and edit-and-resend) start runs too; leased like the others, the other worker can stop
    them, and no worker's sweep takes them for the runs of a dead one."""
    fake_model.push(text("short"), Step(text=LONG, delay=0.05))
    session_id = chat(user, "helper", "hello").session_id
    with user.stream("POST", f"/api/agent-sessions/{session_id}/regenerate", json={}) as resp:
        assert resp.status_code == 200
        lines = resp.iter_lines()
        _read_until_text(lines, 3)
        assert on(twin, user).ok("POST", f"/api/agent-sessions/{session_id}/stop") == {"stopped": True}
        rest = "\n".join(lines)
    assert '"type":"abort"' in rest.replace(" ", ""), "the run on the first worker was stopped"
    status, content = app.sql("SELECT status, content FROM agent_messages WHERE session_id = ? AND "
                              "role = 'assistant'", (session_id,))[0]
    assert status == "stopped" and LONG.startswith(content) and len(content) < len(LONG)


def test_an_approval_answered_on_the_other_worker_resumes_the_run_there(
    app: LiveApp, twin: LiveApp, user: ApiClient, admin: ApiClient, helper: dict[str, Any], fake_model: FakeModel
) -> None:
    register_test_tools(app)
    register_test_tools(twin)
    tool = make_tool(admin, "guard", "test-guarded")
    attach(admin, helper["id"], {"toolId": tool["id"], "needsApproval": True})
    fake_model.push(call("guard", {"action": "go"}, id="ap1"))
    paused = user.post("/api/agents/helper/chat", json={"message": "do it"})
    session_id = paused.headers["x-session-id"]
    assert "tool-approval-request" in types_of(parse_sse(paused.text))
    user_b = on(twin, user)
    assert user_b.ok("GET", f"/api/agent-sessions/{session_id}")["pendingApprovals"][0]["toolCallId"] == "ap1"

    words = " ".join(f"ok{i}" for i in range(40))
    fake_model.push(text(words, delay=0.05))
    answer = {"toolCallId": "ap1", "approved": True}
    with user_b.stream("POST", f"/api/agent-sessions/{session_id}/approvals", json=answer) as resumed:
        lines = resumed.iter_lines()
        body = [next(line for line in lines if '"tool-output-available"' in line)]
        _read_until_text(lines, 2)
        # the first worker follows the resumed run, which the second one writes
        followed = user.get(f"/api/agent-sessions/{session_id}/stream")
        rest = "\n".join(lines)
    outputs = parse_sse(body[0] + "\n\n")
    assert outputs[0]["output"]["data"] == {"did": "go", "approved": True}
    assert followed.headers["x-stream-resume"] == "true"
    assert text_of(parse_sse(followed.text)) == words
    assert "finish" in rest
    assert app.sql("SELECT content FROM agent_messages WHERE session_id = ? AND role = 'assistant'",
                   (session_id,))[0][0] == words


def test_the_side_panel_follows_a_task_from_the_other_worker(
    app: LiveApp, twin: LiveApp, user: ApiClient, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    caller = admin.ok("POST", "/api/admin/agents", json={"slug": "general", "name": "General",
                                                          "systemPrompt": CALLER_PROMPT, "a2aCallable": True})
    admin.ok("POST", "/api/admin/agents", json={"slug": "coder", "name": "Coder", "systemPrompt": CALLEE_PROMPT,
                                                 "a2aCallable": True})
    tool = admin.ok("POST", "/api/agent-tools", json={"slug": "ask-agent", "name": "Ask", "type": "agent-invoke",
                                                       "config": {}})
    attach(admin, caller["id"], {"toolId": tool["id"]})
    fake_model.push(
        caller_step(call("ask-agent", {"agentSlug": "coder", "input": "write it"}, id="i1")),
        callee_step(Step(text="callee words here and there", delay=0.05)),
        caller_step(text("the callee answered")),
    )
    user_b = on(twin, user)
    with user.stream("POST", "/api/agents/general/chat", json={"message": "delegate"}) as resp:
        lines = resp.iter_lines()
        started = next(line for line in lines if '"data-a2a-task-started"' in line)
        task_id = parse_sse(started + "\n\n")[0]["data"]["taskId"]
        panel = user_b.get(f"/api/agents/a2a/stream?taskId={task_id}")
        rest = "\n\n".join(line for line in lines if line)
    assert text_of(parse_sse(panel.text)) == "callee words here and there"
    assert parse_sse(panel.text)[-1] == "[DONE]"
    assert text_of(parse_sse(rest)) == "the callee answered"


async def _cross_worker_a2a(a: str, b: str, token: str, subscribed: int = 3) -> dict[str, Any]:
    """Start a streaming task on worker ``a``; from ``b``: read it, subscribe to it, cancel it."""
    seen: dict[str, Any] = {"main": [], "subscribed": []}
    first = asyncio.Event()
    async with ac.http(token) as hc:
        client_a = await create_client(f"{a}/a2a/coder/", client_config=ClientConfig(streaming=True, httpx_client=hc))
        client_b = await create_client(f"{b}/a2a/coder/", client_config=ClientConfig(streaming=True, httpx_client=hc))

        async def main() -> None:
            async for ev in client_a.send_message(SendMessageRequest(message=ac.user_message("go"))):
                seen["main"].append(ev)
                if ev.HasField("artifact_update"):
                    first.set()

        enough = asyncio.Event()

        async def follow(task_id: str) -> None:
            async for ev in client_b.subscribe(SubscribeToTaskRequest(id=task_id)):
                seen["subscribed"].append(ev)
                if len(seen["subscribed"]) >= subscribed:
                    enough.set()

        runner = asyncio.create_task(main())
        await asyncio.wait_for(first.wait(), 20)
        task_id = ac.task_id_of(seen["main"])
        seen["working"] = await client_b.get_task(GetTaskRequest(id=task_id))
        follower = asyncio.create_task(follow(task_id))
        await asyncio.wait_for(enough.wait(), 20)
        seen["canceled"] = await client_b.cancel_task(CancelTaskRequest(id=task_id))
        done, _ = await asyncio.wait({runner, follower}, timeout=15)
        seen["ended"] = {"main" if t is runner else "follower" for t in done}
        for t in (runner, follower):
            t.cancel()
        seen["task"] = await client_b.get_task(GetTaskRequest(id=task_id))
        seen["task_id"] = task_id
    return seen


def test_a2a_tasks_are_read_followed_and_cancelled_from_the_other_worker(
    app: LiveApp, twin: LiveApp, user: ApiClient, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    admin.ok("POST", "/api/admin/agents", json={"slug": "coder", "name": "Coder", "systemPrompt": CALLEE_PROMPT,
                                                 "a2aCallable": True})
    token = user.ok("POST", "/api/auth/tokens", json={"name": "a2a"})["token"]
    fake_model.push(callee_step(Step(text=LONG, delay=0.05)))
    seen = ac.run(_cross_worker_a2a(app.url, twin.url, token))
    assert seen["working"].status.state == TaskState.TASK_STATE_WORKING
    assert seen["subscribed"][0].HasField("task"), "a subscriber elsewhere gets the stored task first"
    assert any(ev.HasField("artifact_update") for ev in seen["subscribed"][1:]), "then the live chunks"
    assert seen["canceled"].status.state == TaskState.TASK_STATE_CANCELED
    assert seen["ended"] == {"main", "follower"}, "both streams end once the task is cancelled"
    assert seen["task"].status.state == TaskState.TASK_STATE_CANCELED
    streamed = "".join(ac.artifact_text(seen["main"]))
    assert streamed and LONG.startswith(streamed) and len(streamed) < len(LONG), "the run stopped mid-reply"
    (state,), = app.sql("SELECT state FROM a2a_task_sessions WHERE id = ?", (seen["task_id"],))
    assert state == "canceled"
    (status,), = app.sql("SELECT status FROM agent_messages WHERE a2a_task_id = ? AND role = 'assistant'",
                         (seen["task_id"],))
    assert status == "stopped"


def test_a_cancel_on_the_other_worker_stops_a_run_that_is_waiting_on_its_model(
    app: LiveApp, twin: LiveApp, user: ApiClient, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    """The worker running the task writes nothing while a tool works for a minute, so it would only notice a
    cancel recorded elsewhere at its next write; the cancel is sent to it instead and stops it at once."""
    register_test_tools(app)
    register_test_tools(twin)
    coder = admin.ok("POST", "/api/admin/agents", json={"slug": "coder", "name": "Coder",
                                                         "systemPrompt": CALLEE_PROMPT, "a2aCallable": True})
    attach(admin, coder["id"], {"toolId": make_tool(admin, "slow", "test-slow")["id"]})
    token = user.ok("POST", "/api/auth/tokens", json={"name": "a2a"})["token"]
    fake_model.push(callee_step(Step(text="first words", tool_calls=[ToolCall("slow", {"seconds": 60})])))
    seen = ac.run(_cross_worker_a2a(app.url, twin.url, token, subscribed=1))
    assert seen["ended"] == {"main", "follower"}
    assert seen["task"].status.state == TaskState.TASK_STATE_CANCELED
    (status,), = app.sql("SELECT status FROM agent_messages WHERE a2a_task_id = ? AND role = 'assistant'",
                         (seen["task_id"],))
    assert status == "stopped"


def test_one_users_requests_alternate_between_workers(
    app: LiveApp, twin: LiveApp, admin: ApiClient, make_user: Callable[..., ApiClient], helper: dict[str, Any],
    fake_model: FakeModel,
) -> None:
    """Nothing of a user lives in one worker's memory: each request goes to the other worker than the last,
    and a sign-out, a revoked token or a disabled account is refused at once on both."""
    alice_a = make_user("alice")
    alice_b = on(twin, alice_a)
    workers = [alice_a, alice_b]

    def nth(i: int) -> ApiClient:
        return workers[i % 2]

    fake_model.push(text("first"), text("second"))
    first = nth(0).post("/api/agents/helper/chat", json={"message": "one"})
    session_id = first.headers["x-session-id"]
    second = nth(1).post("/api/agents/helper/chat", json={"message": "two", "sessionId": session_id})
    assert text_of(parse_sse(second.text)) == "second"
    assert [s["id"] for s in nth(2).ok("GET", "/api/agent-sessions")["items"]] == [session_id]
    nth(3).ok("PATCH", f"/api/agent-sessions/{session_id}", json={"title": "renamed"})
    detail = nth(4).ok("GET", f"/api/agent-sessions/{session_id}")
    assert detail["title"] == "renamed" and [m["content"] for m in detail["messages"]] == ["one", "first", "two",
                                                                                        "second"]
    made = nth(5).ok("POST", "/api/auth/tokens", json={"name": "cli"})
    bearer = {"Authorization": f"Bearer {made['token']}"}
    for i in range(6, 10):
        assert nth(i).get("/api/agent-sessions", headers=bearer).status_code == 200
    nth(10).ok("DELETE", f"/api/auth/tokens/{made['id']}")
    for i in range(11, 13):
        assert nth(i).get("/api/agent-sessions", headers=bearer).status_code == 401

    nth(13).ok("POST", "/api/auth/logout")
    for i in range(14, 16):
        assert nth(i).get("/api/agent-sessions").status_code == 401

    bob_a = make_user("bob")
    bob_b = on(twin, bob_a)
    assert bob_a.get("/api/agent-sessions").status_code == 200 and bob_b.get("/api/agent-sessions").status_code == 200
    bob = next(u for u in admin.ok("GET", "/api/admin/users")["items"] if u["username"] == "bob")
    on(twin, admin).ok("PATCH", f"/api/admin/users/{bob['id']}", json={"disabled": True})
    assert bob_a.get("/api/agent-sessions").status_code == 401
    assert bob_b.get("/api/agent-sessions").status_code == 401


def test_sign_in_attempts_count_the_same_on_every_worker(
    tmp_path: Path, template_db: Path, app: LiveApp, admin: ApiClient
) -> None:
    """The counts are in Redis: three attempts from one address spread over two workers use up the limit
    of three on both (in each worker's memory they would count one or two)."""
    a = start_app(tmp_path / "a", database_url=app.database_url, login_address_max_attempts=3)
    b = start_app(tmp_path / "b", database_url=app.database_url, login_address_max_attempts=3)
    try:
        workers = [a.client(), b.client()]
        wrong = {"username": "admin", "password": "not-the-password"}
        for i in range(3):
            assert workers[i % 2].post("/api/auth/login", json=wrong).status_code == 401
        for client in workers:
            refused = client.post("/api/auth/login", json={"username": "admin", "password": "password123"})
            assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
    finally:
        a.stop()
        b.stop()
