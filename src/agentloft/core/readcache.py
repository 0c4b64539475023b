"""A process-local cache for the few reads on every chat's path that change only when someone edits them:
whose a session cookie or an API token is, and what a chat with an agent needs (the agent, its model,
the tools the caller's role may see).

Why: each of those reads costs 0.5–2 ms of the event loop's CPU here, together about a quarter of the
time from a chat request to its first words (docs/benchmarks.md), for rows that change a few times a day.

Why it is exact: every write through any connection of the app's engine is noted on its connection,
and when that connection goes back to the pool (after the commit or rollback) the written groups move to
a new generation, which drops their entries. Which groups a statement wrote is taken from what SQLAlchemy
executed, never from the SQL text: an INSERT, UPDATE or DELETE construct (an ORM flush, ORM-enabled or
Core DML) names its target table; SQLite's count of changed rows (``total_changes``) before and after the
statement says whether it changed anything else (a cascade, a trigger), and whether a statement given as
raw SQL (``text()``, ``exec_driver_sql``) wrote at all. Either of those, whose tables are not known,
drops every group: rare, and never wrong (the tables in ``QUIET_SIDE_EFFECTS``, whose triggers and
cascades are known to reach no watched table, are the exception). A reader notes the generation before it
reads and keeps its result only if the generation is unchanged afterwards. So whatever was read while a
write was open (before or after its commit) is gone once the write's transaction ends, and the first read
after that goes to the database.

When: only while this process is the only one writing — SQLite, whose deployments are one server process
(README). A CLI command beside the server only creates accounts, which no entry depends on. With
PostgreSQL several workers may write, so the cache is off there until generations are shared between
processes (the scale-out work's pub/sub).

Entries are shared between requests: callers treat cached rows as read-only (they are detached ORM
objects whose columns are loaded).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import Any, TypeVar

from sqlalchemy import Connection, TableClause, UpdateBase, event
from sqlalchemy.engine.interfaces import DBAPICursor, ExecutionContext
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlalchemy.pool import ConnectionPoolEntry

T = TypeVar("T")

# Which tables each group's entries are read from. A table may feed several groups (a write to it drops
# them all); API tokens have a group of their own because each token's use is written to its row once a
# minute, which should not drop every signed-in browser's entry.
GROUPS: dict[str, frozenset[str]] = {
    "auth": frozenset({"users", "auth_sessions"}),
    "tokens": frozenset({"users", "api_tokens"}),
    # mcp_servers: a disabled server's tools leave every turn (``ToolType.unavailable``).
    "chat_config": frozenset({"agents", "model_configs", "agent_tools", "agent_tool_associations", "mcp_servers",
                              "resource_groups"}),
    # the budgets every turn checks (``usage.budgets``)
    "budgets": frozenset({"usage_budgets"}),
    # A user's group ids (``groups.access.viewer_of``); which resources are limited is in chat_config.
    "groups": frozenset({"group_members"}),
}

# Tables whose writes change rows elsewhere only in tables no group reads: their triggers keep the search
# indexes (migration 0007) and their deletes cascade to chat rows. A write to one of them that changed more
# rows than its own is not taken for a write to an unknown table, so a chat turn (which writes messages and
# sessions on every step) keeps the entries. tests/core/test_readcache_schema.py checks this against the
# migrated schema: a trigger or cascade from these tables that reaches a watched table fails it. Files (and
# documents) also count their owner's stored bytes in ``user_storage`` (migration 0027), which no group reads.
# A usage record adds itself to its user's day in ``usage_daily`` (migration 0038), which no group reads
# either: every turn writes one, and would otherwise drop every entry.
QUIET_SIDE_EFFECTS = frozenset({"agent_sessions", "agent_messages", "agent_documents", "files", "usage_records"})

_TOUCHED = "readcache_touched"  # key in the pooled connection's info: groups written in this checkout
_CHANGES = "readcache_changes"  # key in the pooled connection's info: SQLite's change count before a statement
MAX_ENTRIES = 10_000  # per group; a full group starts over (entries are cheap to read again)


def dml_target(context: ExecutionContext) -> str | None:
    """The table an INSERT, UPDATE or DELETE construct writes; None for anything else (a query, raw SQL)."""
    compiled = context.compiled
    statement = compiled.statement if compiled is not None else None
    if isinstance(statement, UpdateBase) and isinstance(statement.table, TableClause):
        return statement.table.name
    return None


def _total_changes(conn: Connection) -> int | None:
    """Rows changed so far on this connection (aiosqlite's ``total_changes``); None on another driver."""
    changes = getattr(conn.connection.driver_connection, "total_changes", None)
    return changes if isinstance(changes, int) else None


class ReadCache:
    """Generations and entries per group. ``enabled=False`` keeps nothing (every ``load`` reads)."""

    def __init__(self, *, enabled: bool, groups: dict[str, frozenset[str]] = GROUPS) -> None:
        self.enabled = enabled
        self._groups_of: dict[str, set[str]] = {}
        for name, tables in groups.items():
            for table in tables:
                self._groups_of.setdefault(table, set()).add(name)
        self._generation = dict.fromkeys(groups, 0)
        self._entries: dict[str, dict[Hashable, Any]] = {name: {} for name in groups}

    def generation(self, group: str) -> int:
        return self._generation[group]

    def bump(self, group: str) -> None:
        self._generation[group] += 1
        self._entries[group] = {}

    def get(self, group: str, key: Hashable) -> Any:
        """The cached value, or ``None`` (values are never ``None``: absent results are not cached)."""
        return self._entries[group].get(key)

    def put(self, group: str, key: Hashable, value: Any, generation: int) -> None:
        """Keep ``value`` if nothing was written to the group since ``generation`` was noted."""
        if not self.enabled or value is None or generation != self._generation[group]:
            return
        entries = self._entries[group]
        if len(entries) >= MAX_ENTRIES:
            entries = self._entries[group] = {}
        entries[key] = value

    async def load(self, group: str, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        """The cached value of ``key``, else ``await read()`` (kept when no write overlapped it)."""
        hit = self.get(group, key)
        if hit is not None:
            return hit
        generation = self._generation[group]
        value = await read()
        self.put(group, key, value, generation)
        return value

    def attach(self, engine: AsyncEngine) -> None:
        """Watch every statement and every return to the pool of ``engine``."""
        event.listen(engine.sync_engine, "before_cursor_execute", self._before_execute)
        event.listen(engine.sync_engine, "after_cursor_execute", self._after_execute)
        event.listen(engine.sync_engine, "checkin", self._checkin)

    def _before_execute(self, conn: Connection, *_args: Any) -> None:
        conn.info[_CHANGES] = _total_changes(conn)

    def _after_execute(
        self, conn: Connection, cursor: DBAPICursor, _statement: str, _params: Any, context: ExecutionContext,
        _many: bool,
    ) -> None:
        """Note the written groups on the pooled connection (``conn.info`` is the pool record's)."""
        written = self._written(conn, cursor, context)
        if written:
            conn.info.setdefault(_TOUCHED, set()).update(written)

    def _written(self, conn: Connection, cursor: DBAPICursor, context: ExecutionContext) -> set[str]:
        before, after = conn.info.pop(_CHANGES, None), _total_changes(conn)
        changed = None if before is None or after is None else after - before
        target = dml_target(context)
        if target is None:
            return set() if changed == 0 else set(self._generation)  # raw SQL: wrote, or may have
        if changed is not None and changed > max(cursor.rowcount, 0) and target not in QUIET_SIDE_EFFECTS:
            return set(self._generation)  # a cascade or a trigger changed rows elsewhere too
        return set(self._groups_of.get(target, ()))

    def _checkin(self, _dbapi_connection: Any, record: ConnectionPoolEntry) -> None:
        """The transaction has ended (the pool resets a connection before it is back): new generations."""
        for group in record.info.pop(_TOUCHED, ()):
            self.bump(group)
