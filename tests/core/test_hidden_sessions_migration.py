"""Migration 0036 moves "kept out of the session list" from the A2A task row (``visible_in_sidebar``) to
the session (``hidden``): on upgrade, exactly the sessions the old filter hid are hidden; a downgrade
gives the task rows their flag back. On SQLite and, in the PostgreSQL pass, on PostgreSQL."""

from __future__ import annotations

import asyncio

from alembic import command

from agentloft.core import migrate
from tests.support import run_sql

STAMP = "'2026-01-01 00:00:00'"


def test_the_sessions_a_task_row_hid_are_hidden_and_a_downgrade_restores_the_rows(blank_database_url: str) -> None:
    url = blank_database_url
    migrate.upgrade(url, "0035_pending_approvals")
    # a chat of the user's, a task's hidden session, a task's session shown on purpose; a task without one
    tasks = [("t-hid", "'s-task'", 0), ("t-shown", "'s-shown'", 1), ("t-none", "NULL", 0)]
    asyncio.run(run_sql(url,
        "INSERT INTO users (id, username, password_hash, role, disabled, created_at, updated_at) "
        f"VALUES (1, 'u1', 'x', 'user', false, {STAMP}, {STAMP})", *(
        f"INSERT INTO agent_sessions (id, user_id, kind, title, status, title_source, created_at, updated_at) "
        f"VALUES ('{sid}', 1, 'agent', '', 'idle', 'auto', {STAMP}, {STAMP})"
        for sid in ("s-chat", "s-task", "s-shown")), *(
        f"INSERT INTO a2a_task_sessions (id, session_id, user_id, state, visible_in_sidebar, task_version, "
        f"created_at, updated_at) VALUES ('{tid}', {sid}, 1, 'completed', {visible}, 0, {STAMP}, {STAMP})"
        for tid, sid, visible in tasks)))

    migrate.upgrade(url)
    hidden = asyncio.run(run_sql(url, "SELECT id, hidden FROM agent_sessions ORDER BY id"))
    assert [(sid, bool(h)) for sid, h in hidden] == [("s-chat", False), ("s-shown", False), ("s-task", True)]

    command.downgrade(migrate.alembic_config(url), "0035_pending_approvals")
    rows = asyncio.run(run_sql(url, "SELECT id, visible_in_sidebar FROM a2a_task_sessions ORDER BY id"))
    assert rows == [("t-hid", 0), ("t-none", 0), ("t-shown", 1)]
