"""The read cache's ``QUIET_SIDE_EFFECTS`` against the schema the migrations build: no trigger or cascading
foreign key, followed from those tables as far as it goes, may write a table that a cache group reads.
If a migration adds one, the cache would keep stale entries, so this fails and names the path."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from agentloft.core import migrate
from agentloft.core.readcache import GROUPS, QUIET_SIDE_EFFECTS

WATCHED = frozenset().union(*GROUPS.values())


def _reached(conn: sqlite3.Connection, table: str, tables: list[str]) -> set[str]:
    """Tables a write to ``table`` may change besides itself: those its triggers name (any whole-word
    mention counts, which errs on the side of failing) and those whose foreign keys cascade from it."""
    reached: set[str] = set()
    for (sql,) in conn.execute("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = ?", (table,)):
        body = sql.split(" BEGIN ", 1)[-1]
        reached |= {name for name in tables if re.search(rf"\b{re.escape(name)}\b", body)}
    for other in tables:
        for row in conn.execute(f'PRAGMA foreign_key_list("{other}")'):
            if row[2] == table and (row[5] != "NO ACTION" or row[6] != "NO ACTION"):
                reached.add(other)
    return reached - {table}


def test_quiet_tables_reach_no_watched_table(tmp_path: Path) -> None:
    path = tmp_path / "schema.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    conn = sqlite3.connect(path)
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    assert set(tables) >= QUIET_SIDE_EFFECTS
    for start in QUIET_SIDE_EFFECTS:
        path_to: dict[str, list[str]] = {start: [start]}
        todo = [start]
        while todo:
            table = todo.pop()
            for nxt in _reached(conn, table, tables) - path_to.keys():
                path_to[nxt] = [*path_to[table], nxt]
                todo.append(nxt)
        leaks = {name: path_to[name] for name in path_to.keys() & WATCHED}
        assert not leaks, f"a write to {start} reaches watched tables: {leaks}"
    conn.close()
