"""A span per database statement, from SQLAlchemy's cursor events: what ``core.tracing`` hooks onto the
engine when traces are on.

Ours rather than the maintained SQLAlchemy instrumentation's ``EngineTracer``, for two reasons measured or
seen on a traced chat turn (``bench.turn_cost --scenarios observe``): that one names a span after the
statement's first word and the database name, which for SQLite is the file's path (``INSERT
/srv/agentloft/agentloft.db``: a path in every span name, and every statement of a kind under one name),
and it re-reads the engine's URL, the cursor and the connection on every statement to build the same
attributes again. Here a span is named by operation and table (``INSERT agent_messages``, the
semantic conventions' ``{operation} {table}``), worked out once per distinct statement text (a cache:
the app's statements are a few hundred texts), and the engine's attributes are built once.

Attributes: ``db.system``, ``db.operation``, ``db.sql.table`` when there is one, ``db.statement`` (the text
with its placeholders, never the parameters' values) and, for servers, ``db.name`` (the database's name,
never SQLite's path). A failed statement's span has an error status naming only the exception's type:
a driver's message can quote the values (PostgreSQL's "Key (username)=(…) already exists").
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from opentelemetry import trace
from sqlalchemy import event
from sqlalchemy.engine import Engine

_SPAN = "_agentloft_span"
_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*\n?|/\*.*?\*/)*", re.S)
_TABLE_AFTER = {"INSERT": "INTO", "DELETE": "FROM", "SELECT": "FROM", "UPDATE": "", "REPLACE": "INTO"}
_NAME = r'"?([A-Za-z_][\w$]*)"?(?:\."?([A-Za-z_][\w$]*)"?)?'
_TABLE = {op: re.compile(rf"\b{after}\s+{_NAME}" if after else rf"\A{op}\s+(?:OR\s+\w+\s+)?{_NAME}", re.I)
          for op, after in _TABLE_AFTER.items()}


@lru_cache(maxsize=1024)
def describe(statement: str) -> tuple[str, str, str | None]:
    """``(span name, operation, table)`` of a statement's text: ``("INSERT agent_messages", "INSERT",
    "agent_messages")``; a statement without a table (``BEGIN``, ``PRAGMA …``, ``SELECT 1``) is named by
    its operation alone. The first table named after the operation's keyword is the one reported (a
    join's first table, a subquery's outer one when it comes first): a name for grouping, not a parse."""
    leading = _COMMENTS.match(statement)  # matches at least ""
    body = statement[leading.end():] if leading is not None else statement
    words = body.split(None, 1)
    if not words:
        return "SQL", "SQL", None
    operation = words[0].upper()
    pattern = _TABLE.get(operation)
    found = pattern.search(body) if pattern is not None else None
    if found is None:
        return operation, operation, None
    table = found.group(2) or found.group(1)
    return f"{operation} {table}", operation, table


class StatementTracer:
    """Listens to ``engine``'s cursor events and makes a CLIENT span of each statement, a child of the
    span current when it runs (the request's, the turn's)."""

    def __init__(self, tracer: trace.Tracer, engine: Engine) -> None:
        self.tracer = tracer
        system = engine.dialect.name
        self.base: dict[str, str] = {"db.system": system}
        if system != "sqlite" and engine.url.database:
            self.base["db.name"] = engine.url.database
        event.listen(engine, "before_cursor_execute", self._before, retval=False)
        event.listen(engine, "after_cursor_execute", _after)
        event.listen(engine, "handle_error", _failed)

    def _before(self, conn: Any, cursor: Any, statement: str, parameters: Any, context: Any,
                executemany: bool) -> None:
        name, operation, table = describe(statement)
        attributes = {**self.base, "db.operation": operation, "db.statement": statement}
        if table is not None:
            attributes["db.sql.table"] = table
        if context is not None:
            setattr(context, _SPAN, self.tracer.start_span(name, kind=trace.SpanKind.CLIENT,
                                                           attributes=attributes))


def _after(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
    span = getattr(context, _SPAN, None)
    if span is not None:
        span.end()
        setattr(context, _SPAN, None)


def _failed(exception_context: Any) -> None:
    span = getattr(exception_context.execution_context, _SPAN, None)
    if span is not None:
        span.set_status(trace.StatusCode.ERROR, type(exception_context.original_exception).__name__)
        span.end()
        setattr(exception_context.execution_context, _SPAN, None)
