"""SQL query: read-only SQL against a database the admin configured (SQLite or PostgreSQL).

Read-only is enforced three times, because a keyword check alone is easy to fool
(``WITH x AS (DELETE ... RETURNING *) SELECT ...``):
1. the statement must be a single ``SELECT``/``WITH``/``VALUES`` statement (comments stripped);
2. the connection itself is read-only — SQLite is opened as ``file:...?mode=ro`` with
   ``PRAGMA query_only``; PostgreSQL runs in ``SET TRANSACTION READ ONLY``;
3. the transaction is always rolled back.

What a query may cost the server is bounded too: a query is data the model wrote, and
``SELECT hex(randomblob(20000000))`` once came back as a 40 MB tool result, while
``SELECT length(randomblob(300000000))`` grew the server by 284 MB.
- Time, inside the database (SQLite progress handler, PostgreSQL ``statement_timeout``) and outside.
- Value size: SQLite refuses to build any string or blob over ``maxValueBytes`` (``SQLITE_LIMIT_LENGTH``,
  set with the standard library's ``Connection.setlimit`` on a connection of our own, run in a thread).
  PostgreSQL has no such limit, so the query is wrapped: each row's size and the running total are
  computed in the database, and a row over ``maxValueBytes`` or past ``maxResultBytes`` comes back with
  its columns NULL; rows are fetched from a server-side cursor in batches and reading stops at the first
  such row. The server therefore never holds much more than ``maxResultBytes`` of rows.
- Rows (``maxRows``) and result bytes (``maxResultBytes``, measured as JSON): the result says where it
  stopped and why (``truncated`` and ``note``).
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import decimal
import json
import re
import sqlite3
import time
import urllib.parse
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import asyncpg
from pydantic import Field
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, create_async_engine
from sqlalchemy.pool import NullPool

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg", "postgres": "postgresql+asyncpg"}
READ_KEYWORDS = ("select", "with", "values")
_COMMENTS = re.compile(r"--[^\n]*|/\*.*?\*/", re.S)
_STRINGS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"")


class Config(ApiModel):
    url: str = Field(
        default="",
        description="Database URL, e.g. sqlite:////srv/data/shop.db or postgresql://reader:pw@db/shop "
        "(stored encrypted). Prefer a database user that can only read.",
        json_schema_extra={"format": "password", "writeOnly": True},
    )
    max_rows: int = Field(default=200, ge=1, le=10_000, description="Rows returned at most.")
    max_value_bytes: int = Field(
        default=1_000_000, ge=1_000, le=100_000_000,
        description="Largest value (SQLite) or row (PostgreSQL) a query may produce, in bytes. SQLite refuses to "
        "build a larger value; the result stops before a row that holds one.",
    )
    max_result_bytes: int = Field(
        default=200_000, ge=1_000, le=5_000_000,
        description="Largest result returned, in bytes of JSON; the result stops before the row that would pass it.",
    )
    timeout_seconds: float = Field(default=10, gt=0, le=300, description="Time limit for a query.")
    schema_hint: str = Field(
        default="", max_length=10_000,
        description="Tables and columns the model should know about (shown in the tool description).",
    )


class Input(ApiModel):
    query: str = Field(
        min_length=1, max_length=20_000,
        description="One read-only SQL statement (SELECT or WITH ... SELECT). Use :name placeholders for values.",
    )
    params: dict[str, Any] = Field(
        default_factory=dict, description="Values for :name placeholders in the query."
    )


def check_read_only(sql: str) -> str:
    """Return the statement without a trailing semicolon, or raise ValueError if it is not one read."""
    bare = _STRINGS.sub("''", _COMMENTS.sub(" ", sql)).strip()
    if ";" in bare.rstrip(";").rstrip():
        raise ValueError("only a single statement is allowed")
    first = bare.split(None, 1)[0].lower() if bare else ""
    if first.lstrip("(") not in READ_KEYWORDS:
        raise ValueError("only read queries (SELECT, WITH ... SELECT, VALUES) are allowed")
    return sql.strip().rstrip(";").strip()


def engine_url(raw: str) -> URL:
    """The configured URL with an async driver (PostgreSQL)."""
    url = make_url(raw)
    backend = url.get_backend_name()
    if "+" not in url.drivername and backend in ASYNC_DRIVERS:
        url = url.set(drivername=ASYNC_DRIVERS[backend])
    return url


def sqlite_uri(url: URL) -> str:
    """A read-only ``file:`` URI for the SQLite database the URL names (any ``mode`` it set is dropped)."""
    path = url.database or ""
    if not path or path == ":memory:":
        raise ValueError("a SQLite URL needs a database file")
    query: list[tuple[str, str]] = []
    if path.startswith("file:"):
        path, _, raw_query = path.removeprefix("file:").partition("?")
        query = [(k, v) for k, v in urllib.parse.parse_qsl(raw_query) if k != "mode"]
    query += [(k, v) for k, v in url.query.items() if k not in ("mode", "uri") and isinstance(v, str)]
    query.append(("mode", "ro"))
    return f"file:{urllib.parse.quote(path)}?{urllib.parse.urlencode(query)}"


def _json_value(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, decimal.Decimal):
        return float(value) if value == value.to_integral_value() or abs(value) < 1e15 else str(value)
    if isinstance(value, dt.date | dt.time | dt.datetime):
        return value.isoformat()
    if isinstance(value, bytes | bytearray | memoryview):
        return "base64:" + base64.b64encode(bytes(value)).decode()
    if isinstance(value, uuid.UUID | dt.timedelta):
        return str(value)
    if isinstance(value, list | tuple):
        return [_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    return str(value)


@dataclass
class Collected:
    """Rows kept under the row and byte caps, and why the result stopped early (``note``)."""

    max_rows: int
    max_bytes: int
    columns: list[str] = field(default_factory=list)
    rows: list[list[Any]] = field(default_factory=list)
    size: int = 0
    note: str | None = None

    def add(self, raw: Sequence[Any]) -> bool:
        """Keep one row if it fits; False (with the note set) when reading should stop."""
        if len(self.rows) >= self.max_rows:
            return self.stop(f"more rows exist; only the first {self.max_rows} are shown (maxRows)")
        row = [_json_value(v) for v in raw]
        cost = len(json.dumps(row, ensure_ascii=False).encode()) + 1
        if self.size + cost > self.max_bytes:
            return self.stop(f"the next row would take the result past {self.max_bytes} bytes (maxResultBytes)")
        self.rows.append(row)
        self.size += cost
        return True

    def stop(self, why: str) -> bool:
        self.note = f"stopped after {len(self.rows)} rows: {why}"
        return False

    def result(self) -> dict[str, Any]:
        data: dict[str, Any] = {"columns": self.columns, "rows": self.rows, "rowCount": len(self.rows),
                                "truncated": self.note is not None}
        if self.note:
            data["note"] = self.note
        return data


def _too_big(limit: int) -> str:
    return f"the next row holds a value larger than {limit} bytes (maxValueBytes)"


def _sqlite_rows(uri: str, sql: str, params: dict[str, Any], config: Config, out: Collected) -> None:
    """Run the query on a stdlib connection of our own (this runs in a worker thread)."""
    deadline = time.monotonic() + config.timeout_seconds
    conn = sqlite3.connect(uri, uri=True, timeout=config.timeout_seconds, check_same_thread=False)
    try:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, config.max_value_bytes)
        conn.execute("PRAGMA query_only = ON")
        # Returning non-zero from the handler interrupts the running statement.
        conn.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
        try:
            cursor = conn.execute(sql, params)
            out.columns = [d[0] for d in cursor.description or ()]
            for row in cursor:
                if not out.add(row):
                    return
        except sqlite3.DataError as exc:  # SQLITE_TOOBIG: "string or blob too big"
            if "too big" not in str(exc):
                raise
            out.stop(_too_big(config.max_value_bytes))
    finally:
        conn.rollback()
        conn.close()


def _gated(sql: str, width: int, first_cap: int) -> str:
    """``sql`` (in asyncpg's ``$n`` style) wrapped so that a row over the value cap (``$first_cap``) or
    past the result cap (``$first_cap + 1``) comes back with NULL columns and its sizes, computed in
    PostgreSQL: the server never receives it. ``OFFSET 0`` keeps the planner from copying the query's
    expressions into each reference (a constant ``repeat()`` would be computed once per copy)."""
    names = [f"al_c{i}" for i in range(width)]
    ok = f"w.al_size <= ${first_cap} AND w.al_total <= ${first_cap + 1}"
    columns = "".join(f"CASE WHEN {ok} THEN w.{n} END, " for n in names)
    return (
        f"SELECT {columns}w.al_size, w.al_total FROM (SELECT q.*, octet_length(q::text) AS al_size, "
        "sum(octet_length(q::text)) OVER (ROWS UNBOUNDED PRECEDING) AS al_total "
        f"FROM (SELECT * FROM (\n{sql}\n) AS u OFFSET 0) AS q({', '.join(names)})) AS w"
    )


async def _postgres_rows(conn: AsyncConnection, sql: str, params: dict[str, Any], config: Config,
                         out: Collected) -> None:
    """Describe the query (parsed, not planned or run), then read the gated form from a cursor in batches."""
    await conn.exec_driver_sql("SET TRANSACTION READ ONLY")
    await conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(config.timeout_seconds * 1000)}")
    compiled = text(sql).compile(dialect=conn.dialect)  # :name → $n, the order asyncpg wants
    missing = [n for n in compiled.positiontup or () if n not in params]
    if missing:
        raise ValueError(f"no value for the parameter(s) {', '.join(missing)}")
    args = [params[n] for n in compiled.positiontup or ()]
    driver: asyncpg.Connection | None = (await conn.get_raw_connection()).driver_connection
    if driver is None:  # only a connection invalidated after an error has none; never one just used
        raise RuntimeError("the PostgreSQL connection is gone")
    described = await driver.prepare(compiled.string)
    out.columns = [attribute.name for attribute in described.get_attributes()]
    if not out.columns:  # e.g. INSERT inside WITH: the keyword check let it through, nothing to read
        raise ValueError("the statement returns no columns")
    gated = await driver.prepare(_gated(compiled.string, len(out.columns), len(args) + 1))
    async for *values, size, total in gated.cursor(*args, config.max_value_bytes, config.max_result_bytes,
                                                   prefetch=50):
        if size > config.max_value_bytes:
            out.stop(_too_big(config.max_value_bytes))
        elif total > config.max_result_bytes:
            out.stop(f"the next row would take the result past {config.max_result_bytes} bytes (maxResultBytes)")
        if out.note or not out.add(values):
            return


async def run_query(config: Config, sql: str, params: dict[str, Any]) -> dict[str, Any]:
    out = Collected(max_rows=config.max_rows, max_bytes=config.max_result_bytes)
    url = make_url(config.url)
    if url.get_backend_name() == "sqlite":
        uri = sqlite_uri(url)
        async with asyncio.timeout(config.timeout_seconds + 1):  # the progress handler stops it sooner
            await asyncio.to_thread(_sqlite_rows, uri, sql, params, config, out)
        return out.result()
    if url.get_backend_name() != "postgresql":
        raise ValueError(f"unsupported database {url.get_backend_name()!r} (use sqlite or postgresql)")
    engine = create_async_engine(engine_url(config.url), poolclass=NullPool)
    try:
        async with asyncio.timeout(config.timeout_seconds), engine.connect() as conn:
            try:
                await _postgres_rows(conn, sql, params, config, out)
            finally:
                await conn.rollback()
    finally:
        await engine.dispose()
    return out.result()


def _db_message(exc: SQLAlchemyError | sqlite3.Error | asyncpg.PostgresError) -> str:
    if isinstance(exc, sqlite3.Error | asyncpg.PostgresError):
        return str(exc).strip().splitlines()[0]
    if isinstance(exc, DBAPIError) and exc.orig is not None:
        return str(exc.orig).strip().splitlines()[0]
    return str(exc).strip().splitlines()[0]


class SqlQueryTool(ToolType[Config, Input]):
    slug = "sql-query"
    name = "SQL query"
    description = "Runs read-only SQL queries against a database configured by an admin."
    Config = Config
    Input = Input
    secret_fields = ("url",)

    def describe(self, config: Config) -> str:
        try:
            dialect = make_url(config.url).get_backend_name() if config.url else "SQL"
        except ArgumentError:
            dialect = "SQL"
        text_ = (
            f"Run one read-only {dialect} query (SELECT or WITH) and get columns and rows "
            f"(at most {config.max_rows} rows and {config.max_result_bytes // 1000} kB; a note says where a longer "
            "result stopped). Writes are refused."
        )
        if config.schema_hint:
            text_ += "\nSchema:\n" + config.schema_hint
        return text_

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        if not config.url:
            return ToolResult.fail("this SQL tool has no database URL configured")
        try:
            sql = check_read_only(input.query)
            return ToolResult.ok(await run_query(config, sql, input.params))
        except (ValueError, ArgumentError) as exc:
            return ToolResult.fail(f"refused: {exc}")
        except TimeoutError:
            return ToolResult.fail(f"the query ran longer than {config.timeout_seconds:g} s")
        except (SQLAlchemyError, sqlite3.Error, asyncpg.PostgresError) as exc:
            message = _db_message(exc)
            if "interrupted" in message or "statement timeout" in message:
                return ToolResult.fail(f"the query ran longer than {config.timeout_seconds:g} s")
            return ToolResult.fail(f"query failed: {message}")


TOOL_TYPE = SqlQueryTool()
