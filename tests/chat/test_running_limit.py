"""How many of one user's chats may write a reply at once (``AGENTLOFT_MAX_RUNNING_CHATS_PER_USER``):
counted in the database as a turn starts, so every worker counts the same turns; one more is a 429
``too_many_running_chats`` that leaves nothing behind. Here the limit is 2."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text as sql

from agentloft.chat import service
from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.core.errors import TooMany
from agentloft.core.ids import new_id
from tests.chat.helpers import attach, chat, make_tool, post_stream, session_status, wait_for
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.support import ApiClient, LiveApp, add_user, start_app, wait_until

LIMIT = 2


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    live = start_app(tmp_path / "data", template_db, max_running_chats_per_user=LIMIT)
    yield live
    live.stop()


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 429, response.text
    error = response.json()["error"]
    assert error["code"] == "too_many_running_chats" and "2 of your chats" in error["message"]


def _counts(app: LiveApp) -> tuple[Any, ...]:
    return (app.sql("SELECT count(*) FROM agent_sessions")[0][0],
            app.sql("SELECT count(*) FROM agent_messages")[0][0])


def test_one_chat_too_many_is_refused_and_leaves_nothing(
    app: LiveApp, user: ApiClient, make_user: Any, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    fake_model.push(text("first answer"))
    idle = chat(user, "helper", "hello")
    assert idle.text == "first answer"
    [(question,)] = app.sql("SELECT id FROM agent_messages WHERE session_id = ? AND role = 'user'",
                            (idle.session_id,))
    fake_model.push(Step(hang=True), Step(hang=True))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "one"}) as one, \
            user.stream("POST", "/api/llm/chat", json={"message": "two"}) as two:
        assert one.status_code == two.status_code == 200
        before = _counts(app)
        _refused(user.post("/api/agents/helper/chat", json={"message": "three"}))
        _refused(user.post("/api/agents/helper/chat", json={"message": "again", "sessionId": idle.session_id}))
        _refused(user.post(f"/api/agent-sessions/{idle.session_id}/regenerate"))
        _refused(user.post(f"/api/agent-sessions/{idle.session_id}/messages/{question}/resend",
                           json={"message": "edited"}))
        assert _counts(app) == before  # no session, no message, no claim
        assert session_status(app, idle.session_id) == "idle"
        assert [m["content"] for m in user.ok("GET", f"/api/agent-sessions/{idle.session_id}")["messages"]] == [
            "hello", "first answer"]
        # the limit is per user
        fake_model.push(text("hi bob"))
        assert chat(make_user("bob"), "helper", "hi").text == "hi bob"
        # a chat stopped is no longer running
        assert user.ok("POST", f"/api/agent-sessions/{one.headers['x-session-id']}/stop") == {"stopped": True}
        one.read()
        fake_model.push(text("room again"))
        assert chat(user, "helper", "again", session_id=idle.session_id).text == "room again"
        assert user.ok("POST", f"/api/agent-sessions/{two.headers['x-session-id']}/stop") == {"stopped": True}
        two.read()


def test_turns_starting_at_once_never_pass_the_limit(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    """Eight new chats at once: exactly two start. Counted before the claim (or, on PostgreSQL, without
    one turn waiting for the other's count), several would count the same free places."""
    fake_model.push(*[Step(hang=True) for _ in range(8)])

    async def burst() -> list[int]:
        headers = {"X-CSRF-Token": user.cookies["agentloft_csrf"]}
        async with httpx.AsyncClient(base_url=app.url, cookies=user.cookies, headers=headers, timeout=60) as c:
            requests = [c.build_request("POST", "/api/agents/helper/chat", json={"message": f"n{i}"})
                        for i in range(8)]
            responses = await asyncio.gather(*(c.send(r, stream=True) for r in requests))
            for r in responses:
                await r.aclose()  # a closed stream leaves its run going
            return sorted(r.status_code for r in responses)

    assert asyncio.run(burst()) == [200] * LIMIT + [429] * (8 - LIMIT)
    running = app.sql("SELECT id FROM agent_sessions WHERE status = 'running'")
    assert len(running) == LIMIT and _counts(app)[0] == LIMIT
    for (sid,) in running:
        user.ok("POST", f"/api/agent-sessions/{sid}/stop")


def test_a_paused_reply_resumes_whatever_else_runs(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    """A reply waiting for an approval is not running; answering it resumes the turn admitted when it
    started, even with the limit reached meanwhile (refusing it would leave the answer recorded and
    nothing to resume)."""
    tool = make_tool(admin, "guard", "test-guarded")
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0, "needsApproval": True})
    fake_model.push(Step(text="Let me.", tool_calls=[ToolCall("guard", {"action": "read"}, id="ap1")]))
    paused = chat(user, "helper", "please act")
    assert session_status(app, paused.session_id) == "awaiting_approval"
    fake_model.push(Step(hang=True), Step(hang=True))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "one"}) as one, \
            user.stream("POST", "/api/agents/helper/chat", json={"message": "two"}) as two:
        assert one.status_code == two.status_code == 200
        _refused(user.post("/api/agents/helper/chat", json={"message": "three"}))
        fake_model.push(text("Done."))
        resumed = post_stream(user, f"/api/agent-sessions/{paused.session_id}/approvals",
                              {"toolCallId": "ap1", "approved": True})
        assert resumed.status == 200 and resumed.text == "Done."
        for live in (one, two):
            user.ok("POST", f"/api/agent-sessions/{live.headers['x-session-id']}/stop")
            live.read()
    wait_for(lambda: app.sql("SELECT count(*) FROM agent_sessions WHERE status = 'running'") == [(0,)])


async def _turn(db: Database, *, begun: asyncio.Event | None = None, commit: asyncio.Event | None = None) -> str:
    """A new plain chat of user 1 with the limit 1; ``begun`` is set once it is, and its transaction is
    held open until ``commit`` is set."""
    async with db.session() as s:
        await service.begin_turn(db=s, session_id=new_id("as"), user_id=1, agent_id=None, user_text="hi",
                                 model_id=None, extra=None, running_limit=1,
                                 create=service.NewSession(user_id=1, agent_id=None, kind="llm"))
        if begun is not None and commit is not None:
            begun.set()
            await commit.wait()
    return "started"


async def _waits_on_a_lock(db: Database) -> bool:
    """PostgreSQL: whether some connection waits on a row lock. (On SQLite a second writer cannot get past
    its first write while another's transaction is open.)"""
    if db.dialect != "postgresql":
        return True
    async with db.session() as s:
        waiting = ("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                   "AND datname = current_database()")
        return int((await s.execute(sql(waiting))).scalar_one()) > 0


async def _two_at_once(url: str) -> None:
    db = Database(url)
    try:
        await add_user(db)
        begun, commit = asyncio.Event(), asyncio.Event()
        first = asyncio.create_task(_turn(db, begun=begun, commit=commit))
        async with asyncio.timeout(30):
            await begun.wait()
        second = asyncio.create_task(_turn(db))
        # the second has counted, or waits to: let the first commit
        await wait_until(lambda: second.done() or _waits_on_a_lock(db), limit_s=30)
        commit.set()
        assert await first == "started"
        with pytest.raises(TooMany):
            await second
        async with db.session() as s:
            running = (await s.execute(sql("SELECT count(*) FROM agent_sessions WHERE status = 'running'")))
            assert running.scalar_one() == 1
    finally:
        await db.dispose()


def test_two_turns_of_one_user_count_one_after_the_other(blank_database_url: str) -> None:
    """The second turn's count waits for the first turn's transaction: counting what is committed while the
    first is still open, it would find a free place that the first is taking."""
    migrate.upgrade(blank_database_url)
    asyncio.run(_two_at_once(blank_database_url))
