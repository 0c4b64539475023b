"""The agent-invoke tool end to end over HTTP: a user chats with a caller agent that hands a sub-task to a
callee agent; the callee's reply streams into the panel's buffer and is stored with its source."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step, system_prompt_of
from tests.chat.helpers import Streamed, chat, parse_sse
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, call, text
from tests.support import ApiClient, LiveApp, start_app

Agents = tuple[dict[str, Any], dict[str, Any]]


def ask(slug: str, question: str) -> Step:
    return caller_step(call("ask-agent", {"agentSlug": slug, "input": question}))


def tool_output(reply: Streamed) -> dict[str, Any]:
    """The agent-invoke call's one outcome chunk: ``tool-output-available`` or ``tool-output-error``."""
    outputs = reply.of("tool-output-available") + reply.of("tool-output-error")
    assert len(outputs) == 1, reply.types
    return outputs[0]


def panel(client: ApiClient, task_id: str) -> list[Any]:
    r = client.get(f"/api/agents/a2a/stream?taskId={task_id}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream"), r.text
    return parse_sse(r.text)


def deltas(chunks: list[Any]) -> str:
    return "".join(c["delta"] for c in chunks if isinstance(c, dict) and c.get("type") == "text-delta")


def requests_of(fake_model: FakeModel, prompt: str) -> list[dict[str, Any]]:
    return [r for r in fake_model.requests if prompt in system_prompt_of(r)]


def test_invoke_streams_to_panel_and_stores_source(
    app: LiveApp, user: ApiClient, make_user: Callable[..., ApiClient], admin: ApiClient, pair: Agents,
    fake_model: FakeModel,
) -> None:
    caller, callee = pair
    fake_model.push(ask("coder", "write add()"),
                    callee_step(text("def add(a, b): return a + b")),
                    caller_step(text("The coder says: done.")))
    reply = chat(user, "general", "please get me an add function")
    assert reply.status == 200, reply.body

    started = reply.of("data-a2a-task-started")
    assert len(started) == 1
    data = started[0]["data"]
    task_id = data["taskId"]
    assert data == {"taskId": task_id, "calleeAgentSlug": "coder", "calleeAgentName": "Coder",
                    "calleeSessionId": data["calleeSessionId"]}
    assert reply.types.index("data-a2a-task-started") < reply.types.index("tool-output-available")
    output = tool_output(reply)
    assert output["type"] == "tool-output-available"
    assert "def add(a, b): return a + b" in json.dumps(output["output"])
    assert task_id in json.dumps(output["output"]), "the tool result's metadata carries taskId"
    assert reply.text == "The coder says: done.", "the caller's run goes on after the call"

    # The panel's stream: the callee's reply, then its end.
    chunks = panel(user, task_id)
    assert deltas(chunks) == "def add(a, b): return a + b"
    assert chunks[-1] == "[DONE]" and not [c for c in chunks if isinstance(c, dict) and c["type"] == "error"]

    # Only the user who owns the calling session may watch it.
    assert make_user("bob").get(f"/api/agents/a2a/stream?taskId={task_id}").status_code == 404
    assert admin.get(f"/api/agents/a2a/stream?taskId={task_id}").status_code == 404

    # Storage: the callee's two messages carry source, task, caller agent and caller session.
    rows = app.sql("SELECT m.session_id, m.role, m.content, m.source, m.a2a_task_id, m.caller_agent_id, "
                   "m.caller_session_id FROM agent_messages m WHERE m.source = 'a2a' ORDER BY m.sort_order")
    callee_session = rows[0][0]
    assert [r[1:] for r in rows] == [
        ("user", "write add()", "a2a", task_id, caller["id"], reply.session_id),
        ("assistant", "def add(a, b): return a + b", "a2a", task_id, caller["id"], reply.session_id),
    ]
    assert app.sql("SELECT DISTINCT source FROM agent_messages WHERE session_id = ?", (reply.session_id,)) == [
        ("user",)]
    assert app.sql("SELECT id, session_id, agent_id, caller_agent_id, caller_session_id, state "
                   "FROM a2a_task_sessions") == [
        (task_id, callee_session, callee["id"], caller["id"], reply.session_id, "completed")]
    assert app.sql("SELECT hidden FROM agent_sessions WHERE id = ?", (callee_session,)) == [(1,)]
    (owner,), = app.sql("SELECT u.username FROM agent_sessions s JOIN users u ON u.id = s.user_id WHERE s.id = ?",
                        (callee_session,))
    assert owner == "alice", "the callee session belongs to the calling user"
    # The audit trail: the delegation (written with the task row), and the call that made it.
    trail = admin.ok("GET", "/api/admin/audit", params={"type": "a2a.delegation"})["items"]
    assert [(e["target"], e["detail"]["callerAgentId"], e["detail"]["callerSessionId"], e["detail"]["calleeAgentId"],
             e["detail"]["via"]) for e in trail] == [
        (f"task:{task_id}", caller["id"], reply.session_id, callee["id"], "agent-invoke")]
    calls = admin.ok("GET", "/api/admin/audit", params={"type": "tool.call"})["items"]
    assert [(e["detail"]["tool"], e["detail"]["outcome"], e["detail"]["sessionId"]) for e in calls] == [
        ("ask-agent", "success", reply.session_id)]

    # The session list shows the caller's conversation only, never the task's session.
    listed = user.ok("GET", "/api/agent-sessions")
    assert [s["id"] for s in listed["items"]] == [reply.session_id] and listed["total"] == 1
    # The tool's maxOutputTokens (default 2000) caps the callee below its own 4096.
    callee_req = requests_of(fake_model, CALLEE_PROMPT)[0]
    assert callee_req.get("max_tokens", callee_req.get("max_completion_tokens")) == 2000


def test_visible_task_session_is_listed(app: LiveApp, user: ApiClient, pair: Agents, fake_model: FakeModel) -> None:
    fake_model.push(ask("coder", "q"), callee_step(text("a")), caller_step(text("ok")))
    chat(user, "general", "go")
    assert user.ok("GET", "/api/agent-sessions")["total"] == 1
    # Hidden by the session's flag, not by the messages' source: flip it and the session shows.
    (task_session,), = app.sql("SELECT session_id FROM a2a_task_sessions")
    app.sql("UPDATE agent_sessions SET hidden = false WHERE id = ?", (task_session,))
    ids = [s["id"] for s in user.ok("GET", "/api/agent-sessions")["items"]]
    assert task_session in ids and len(ids) == 2


# Lists one user's sessions in a fresh interpreter where no A2A module can be imported: what hides an A2A
# task's session must not depend on the A2A domain having been imported (it once did: a filter its models
# appended to the chat service on import).
WITHOUT_A2A = """
import asyncio, json, sys
sys.modules["agentloft.a2a"] = None  # importing any A2A module now fails
from agentloft.chat import service
from agentloft.core.db import Database
from agentloft.core.schemas import PageParams
from agentloft.groups.access import Viewer


async def listed() -> dict:
    db = Database(sys.argv[1])
    try:
        async with db.session() as s:
            user_id, viewer = int(sys.argv[2]), Viewer(role="user")
            rows, total = await service.list_sessions(db=s, user_id=user_id, viewer=viewer, page=PageParams())
            hits = await service.search_sessions(db=s, user_id=user_id, viewer=viewer, q="A2A", page=PageParams())
            return {"ids": [r.id for r in rows], "total": total, "found": [h.session.id for h in hits.items]}
    finally:
        await db.dispose()


print(json.dumps(asyncio.run(listed())))
"""


def test_the_sidebar_never_lists_a_task_session_whatever_was_imported(
    app: LiveApp, user: ApiClient, pair: Agents, fake_model: FakeModel
) -> None:
    fake_model.push(ask("coder", "q"), callee_step(text("a")), caller_step(text("ok")))
    reply = chat(user, "general", "go")
    (owner,), = app.sql("SELECT user_id FROM agent_sessions WHERE id = ?", (reply.session_id,))
    url = app.database_url or f"sqlite+aiosqlite:///{app.db_path}"
    done = subprocess.run([sys.executable, "-c", WITHOUT_A2A, url, str(owner)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"ids": [reply.session_id], "total": 1, "found": []}
    assert len(app.sql("SELECT id FROM agent_sessions")) == 2  # the task's session is there, only unlisted


def test_panel_follows_live(app: LiveApp, user: ApiClient, pair: Agents, fake_model: FakeModel) -> None:
    words = " ".join(f"w{i}" for i in range(30))
    fake_model.push(ask("coder", "long"), callee_step(Step(text=words, delay=0.05)), caller_step(text("ok")))
    done: dict[str, Streamed] = {}
    runner = threading.Thread(target=lambda: done.setdefault("reply", chat(user, "general", "go")))
    runner.start()
    deadline = time.monotonic() + 20
    while not app.sql("SELECT id FROM a2a_task_sessions WHERE state = 'working'"):
        assert time.monotonic() < deadline, "the task never started"
        time.sleep(0.02)
    (task_id,), = app.sql("SELECT id FROM a2a_task_sessions")
    arrivals: list[float] = []
    text_seen = ""
    with user.stream("GET", f"/api/agents/a2a/stream?taskId={task_id}") as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: {") and '"text-delta"' in line:
                arrivals.append(time.monotonic())
                text_seen += json.loads(line[6:])["delta"]
    runner.join(20)
    assert text_seen == words
    assert arrivals[-1] - arrivals[0] > 0.5, "chunks arrived over time, not in one lump at the end"
    assert done["reply"].text == "ok"


def test_no_buffer_once_the_reply_is_gone(
    tmp_path: Path, template_db: Path, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """After the buffer's grace period the panel stream says so instead of hanging."""
    live = start_app(tmp_path / "short-grace", template_db, stream_grace_seconds=0.2)
    try:
        with live.client() as c:
            c.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
            c.ok("POST", "/api/admin/models", json={"name": "Fake", "provider": "openai", "isDefault": True,
                                                    "baseUrl": fake_model_server.base_url, "model": "fake"})
            caller = c.ok("POST", "/api/admin/agents", json={"slug": "general", "name": "General",
                                                             "systemPrompt": CALLER_PROMPT})
            c.ok("POST", "/api/admin/agents", json={"slug": "coder", "name": "Coder", "a2aCallable": True,
                                                    "systemPrompt": CALLEE_PROMPT})
            tool = c.ok("POST", "/api/agent-tools", json={"slug": "ask-agent", "name": "Ask",
                                                          "type": "agent-invoke"})
            c.ok("PUT", f"/api/admin/agents/{caller['id']}/tools", json=[{"toolId": tool["id"]}])
            fake_model.push(ask("coder", "q"), callee_step(text("a")), caller_step(text("ok")))
            task_id = chat(c, "general", "go").of("data-a2a-task-started")[0]["data"]["taskId"]
            time.sleep(0.6)
            assert c.ok("GET", f"/api/agents/a2a/stream?taskId={task_id}") == {"active": False,
                                                                               "reason": "no-buffer"}
    finally:
        live.stop()
