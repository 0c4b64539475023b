"""How many database statements and transactions one chat turn costs: a follow-up turn (bearer token,
50 chunks) is counted on the app's engine with SQLAlchemy's events, from the request to the saved reply,
so the count cannot creep back up unnoticed. The budget: at most 3 transactions and 14 statements
(BEGIN, COMMIT and ROLLBACK included). It was 12 until usage and budgets (issue 33) added two statements
inside the turn's existing transactions and none of their own: the read of the budgets that apply, in the
transaction that begins the turn, and the usage record's INSERT, in the one that saves the reply. A
group member's turn on resources limited to groups may take two more (16), for the access rules."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from sqlalchemy import Connection, event
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.chat.helpers import Streamed, attach, make_tool, session_status, wait_for
from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp


class StatementLog:
    """Every statement the engine runs, by its first word, with BEGIN / COMMIT / ROLLBACK."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine.sync_engine
        self.entries: list[str] = []
        self.sql: list[str] = []
        self.on = False

    def _statement(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if self.on:
            self.entries.append(statement.split(None, 1)[0].upper())
            self.sql.append(statement[:80])

    def _ends(self, conn: Connection, word: str) -> None:
        """SQLAlchemy reports a transaction's ends also on an autocommit connection, where the database
        sees none: those are left out."""
        if self.on and conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
            self.entries.append(word)

    def _begin(self, conn: Connection) -> None:
        self._ends(conn, "BEGIN")

    def _commit(self, conn: Connection) -> None:
        self._ends(conn, "COMMIT")

    def _rollback(self, conn: Connection) -> None:
        self._ends(conn, "ROLLBACK")

    def __enter__(self) -> StatementLog:
        event.listen(self.engine, "before_cursor_execute", self._statement)
        event.listen(self.engine, "begin", self._begin)
        event.listen(self.engine, "commit", self._commit)
        event.listen(self.engine, "rollback", self._rollback)
        return self

    def __exit__(self, *_: object) -> None:
        event.remove(self.engine, "before_cursor_execute", self._statement)
        event.remove(self.engine, "begin", self._begin)
        event.remove(self.engine, "commit", self._commit)
        event.remove(self.engine, "rollback", self._rollback)

    @property
    def transactions(self) -> int:
        return self.entries.count("BEGIN")


@pytest.fixture
def statements(app: LiveApp) -> Iterator[StatementLog]:
    """The turn's statements, without the checkpoints of its reply: those come once per second of
    streaming (``chat.checkpoint``, tested in test_checkpoints.py), so on a slow machine a turn would
    count one more transaction than on a fast one."""
    server_app: FastAPI = app.server.server.config.app
    checkpoints = server_app.state.runtime.checkpoints
    period, checkpoints.period_s = checkpoints.period_s, 3600.0
    try:
        with StatementLog(server_app.state.db.engine) as log:
            yield log
    finally:
        checkpoints.period_s = period


def _follow_up(app: LiveApp, client: ApiClient, fake_model: FakeModel, statements: StatementLog) -> None:
    """Two turns through ``client``'s API token; the second one's statements are counted."""
    token = client.ok("POST", "/api/auth/tokens", json={"name": "t"})["token"]
    fake_model.default = lambda body: Step(text="word " * 50, chunks=50)
    with ApiClient(app.url, csrf=False, headers={"Authorization": f"Bearer {token}"}) as bearer:
        first = Streamed(bearer.post("/api/agents/helper/chat", json={"message": "one"}))
        assert first.session_id
        wait_for(lambda: session_status(app, first.session_id or "") == "idle")
        statements.on = True
        second = Streamed(bearer.post("/api/agents/helper/chat",
                                      json={"message": "two", "sessionId": first.session_id}))
        wait_for(lambda: session_status(app, first.session_id or "") == "idle")
        statements.on = False
    assert second.text.strip().startswith("word")


def test_a_follow_up_turn_stays_within_its_statement_budget(
    app: LiveApp, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel, statements: StatementLog
) -> None:
    _follow_up(app, admin, fake_model, statements)
    assert statements.transactions <= 3, statements.sql
    assert len(statements.entries) <= 14, statements.sql


def test_a_group_members_turn_pays_two_reads_for_its_access_rules(
    app: LiveApp, admin: ApiClient, agent: dict[str, Any], model_id: int, fake_model: FakeModel,
    make_user: Callable[..., ApiClient], statements: StatementLog
) -> None:
    """A user who is no admin, and an agent, its model and its tool limited to that user's group: the
    access rules (issue 32) cost such a turn two statements more than an admin's, in the transaction
    that begins it and none of their own: the caller's groups, and the groups of the agent, model and
    tools at once. (Where the read cache holds the chat's configuration, SQLite, both are cached.)"""
    member = make_user("member")
    member_id = next(u["id"] for u in admin.ok("GET", "/api/admin/users?pageSize=100")["items"]
                     if u["username"] == "member")
    team = admin.ok("POST", "/api/admin/groups", json={"name": "team"})["id"]
    admin.ok("PUT", f"/api/admin/groups/{team}/members", json=[member_id])
    limited = {"groupIds": [team]}
    admin.ok("PUT", f"/api/admin/models/{model_id}", json=limited)
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json=limited)
    tool = make_tool(admin, "calc", "calculator", **limited)
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0})
    _follow_up(app, member, fake_model, statements)
    assert statements.transactions <= 3, statements.sql
    assert len(statements.entries) <= 16, statements.sql
