"""SQL query: read-only SQL against a database the admin configured (SQLite or PostgreSQL).

Read-only is enforced three times, because a keyword check alone is easy to fool
(``WITH x AS (DELETE ... RETURNING *) SELECT ...``):
1. the statement must be a single ``SELECT``/``WITH``/``VALUES`` statement (comments stripped);
2. the connection itself is read-only — SQLite is opened as ``file:...?mode=ro`` with
   ``PRAGMA query_only``; PostgreSQL runs in ``SET TRANSACTION READ ONLY``;
3. the transaction is always rolled back.
Time is bounded inside the database (SQLite progress handler, PostgreSQL ``statement_timeout``) and
outside (``asyncio.timeout``); rows are fetched up to ``maxRows`` + 1 to tell whether more exist.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import decimal
import re
import time
import uuid
from typing import Any

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
    """The configured URL with an async driver, and for SQLite a read-only URI."""
    url = make_url(raw)
    backend = url.get_backend_name()
    if "+" not in url.drivername and backend in ASYNC_DRIVERS:
        url = url.set(drivername=ASYNC_DRIVERS[backend])
    if backend == "sqlite":
        path = url.database or ""
        if not path or path == ":memory:":
            raise ValueError("a SQLite URL needs a database file")
        if not path.startswith("file:"):
            path = f"file:{path}"
        url = url.set(database=path, query={**url.query, "mode": "ro", "uri": "true"})
    return url


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


async def _make_read_only(conn: AsyncConnection, dialect: str, timeout_s: float) -> None:
    if dialect == "sqlite":
        await conn.exec_driver_sql("PRAGMA query_only = ON")
        driver = (await conn.get_raw_connection()).driver_connection
        if driver is None:  # only a connection invalidated after an error has none; never one just used
            raise RuntimeError("the SQLite connection is gone")
        deadline = time.monotonic() + timeout_s
        # Returning non-zero from the handler interrupts the running statement.
        await driver.set_progress_handler(lambda: int(time.monotonic() > deadline), 10_000)
    elif dialect == "postgresql":
        await conn.exec_driver_sql("SET TRANSACTION READ ONLY")
        await conn.exec_driver_sql(f"SET LOCAL statement_timeout = {int(timeout_s * 1000)}")


async def run_query(config: Config, sql: str, params: dict[str, Any]) -> dict[str, Any]:
    engine = create_async_engine(engine_url(config.url), poolclass=NullPool)
    try:
        async with asyncio.timeout(config.timeout_seconds), engine.connect() as conn:
            try:
                await _make_read_only(conn, engine.dialect.name, config.timeout_seconds)
                result = await conn.execute(text(sql), params)
                columns = list(result.keys())
                rows = result.fetchmany(config.max_rows + 1)
            finally:
                await conn.rollback()
    finally:
        await engine.dispose()
    return {
        "columns": columns,
        "rows": [[_json_value(v) for v in row] for row in rows[: config.max_rows]],
        "rowCount": min(len(rows), config.max_rows),
        "truncated": len(rows) > config.max_rows,
    }


def _db_message(exc: SQLAlchemyError) -> str:
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
            f"(at most {config.max_rows} rows). Writes are refused."
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
        except SQLAlchemyError as exc:
            message = _db_message(exc)
            if "interrupted" in message or "statement timeout" in message:
                return ToolResult.fail(f"the query ran longer than {config.timeout_seconds:g} s")
            return ToolResult.fail(f"query failed: {message}")


TOOL_TYPE = SqlQueryTool()
