"""Migration 0006 replaces the default Assistant prompt where it is still the old default text, and only
there (on SQLite, and on PostgreSQL in the PostgreSQL pass)."""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
from alembic import command

from agentloft.core import migrate
from tests.pg import database as pg

M = importlib.import_module("agentloft.migrations.versions.0006_default_prompt")
Query = Callable[..., list[tuple[Any, ...]]]


@pytest.fixture
def database(tmp_path: Path) -> Iterator[tuple[str, Query]]:
    """An empty database (the test migrates it itself) and a way to run SQL on it."""
    if pg.server_url():
        name = pg.new_name("migration")
        url = pg.create_database(name)
        try:
            yield url, lambda sql, params=(): pg.query(url, sql, params)
        finally:
            pg.drop_database(name)
        return
    path = tmp_path / "migration.db"

    def query(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with closing(sqlite3.connect(path)) as conn:
            rows = conn.execute(sql, params).fetchall()
            conn.commit()
            return rows

    yield f"sqlite+aiosqlite:///{path}", query


def test_only_the_untouched_default_prompt_is_replaced(database: tuple[str, Query]) -> None:
    url, query = database
    migrate.upgrade(url, "0005_a2a")
    own = M.OLD_PROMPT + " Keep answers under 100 words."
    for slug, prompt in (("assistant", M.OLD_PROMPT), ("copy", M.OLD_PROMPT), ("mine", own), ("empty", "")):
        query("INSERT INTO agents (slug, name, description, system_prompt, max_steps, max_output_tokens, enabled,"
              " a2a_callable, created_at, updated_at) VALUES (?, ?, '', ?, 10, 4096, true, false,"
              " CURRENT_TIMESTAMP, CURRENT_TIMESTAMP)", (slug, slug.title(), prompt))

    def prompts() -> dict[str, str]:
        return dict(query("SELECT slug, system_prompt FROM agents"))

    migrate.upgrade(url)
    assert prompts() == {"assistant": M.NEW_PROMPT, "copy": M.NEW_PROMPT, "mine": own, "empty": ""}
    command.downgrade(migrate.alembic_config(url), "0005_a2a")
    assert prompts() == {"assistant": M.OLD_PROMPT, "copy": M.OLD_PROMPT, "mine": own, "empty": ""}
