"""Database engine, sessions and the declarative base.

One ``Database`` object per app (the runtime's ``rt.db``; also ``app.state.db`` for tests that reach
the engine of a running app) owns the async engine. Request handlers get a
session through the ``DbSession`` dependency (``core.dependencies``); background work (chat runs, A2A
tasks) opens its own with ``database.session()`` because it outlives the request that started it.

SQLite runs in WAL mode with foreign keys on and a busy timeout, so readers never block the writer and
concurrent writers wait instead of failing.
"""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar, cast

from sqlalchemy import (
    JSON,
    CursorResult,
    DateTime,
    Executable,
    MetaData,
    Select,
    String,
    Table,
    Text,
    event,
    exc,
    make_url,
    select,
)
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.orm import DeclarativeBase, InstrumentedAttribute, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from agentloft.core.db_sqlite import BUSY_TIMEOUT_S, JOURNAL_SIZE_LIMIT, inline_reads, loop_connection_factory
from agentloft.core.readcache import ReadCache
from agentloft.core.textsearch import register_sqlite_functions

if TYPE_CHECKING:
    from agentloft.core.errors import NotFound

T = TypeVar("T")

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def utcnow() -> datetime:
    return datetime.now(UTC)


async def one_or_404(db: AsyncSession, query: Select[T], missing: NotFound) -> T:
    """The one row ``query`` selects, else ``missing`` raised: the single way a service loads a record
    that must exist. Ownership belongs in ``query`` (a row of another user is as missing as none)."""
    row = (await db.execute(query)).scalar_one_or_none()
    if row is None:
        raise missing
    return row


async def rows_matched(db: AsyncSession, stmt: Executable) -> int:
    """How many rows an UPDATE or DELETE matched: the way a conditional write tells whether it won.
    ``AsyncSession.execute`` is typed as returning ``Result``; for DML it returns a ``CursorResult``,
    which alone carries ``rowcount``."""
    result = cast("CursorResult[Any]", await db.execute(stmt))
    return result.rowcount


async def value_taken(db: AsyncSession, column: InstrumentedAttribute[Any], value: Any, *,
                      id_column: InstrumentedAttribute[Any], except_id: Any = None) -> bool:
    """Whether another row than ``except_id`` holds ``value`` in ``column``: the check behind every 409
    for a taken slug or name (a unique index still stops a concurrent one)."""
    stmt = select(id_column).where(column == value)
    if except_id is not None:
        stmt = stmt.where(id_column != except_id)
    return (await db.execute(stmt)).first() is not None


def table_of(model: type[Base]) -> Table:
    """A mapped class's Core ``Table``, for Core statements on it. Declarative types ``__table__`` as
    any ``FromClause`` (a class may be mapped to a join); every model here is mapped to one table."""
    table = model.__table__
    if not isinstance(table, Table):
        raise TypeError(f"{model.__name__} is not mapped to a single table")
    return table


class UTCDateTime(TypeDecorator[datetime]):
    """Timestamps stored as UTC and always read back timezone-aware, on SQLite as on PostgreSQL."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


# PostgreSQL's text cannot hold U+0000 (asyncpg refuses the value, the write fails) and its JSON keeps a
# ``\u0000`` escape it cannot turn back into text. Models and tools do send it (a reply, a tool's output
# of a binary page), so text bound for these columns has it replaced with U+FFFD, the character that
# stands for one that cannot be shown. On SQLite too, so a message reads back the same on both databases.
NUL = "\x00"
NUL_STANDIN = "\ufffd"
# What no database stores: U+0000 (PostgreSQL) and a lone UTF-16 surrogate (neither driver encodes one; a
# str never holds a valid pair, JSON's pair decodes to the one code point it stands for).
UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _replaced(value: Any, pattern: re.Pattern[str]) -> Any:
    """``value`` with every match of ``pattern`` replaced by U+FFFD in every string, dict keys included,
    at any depth (tuples become lists, as JSON has them)."""
    if isinstance(value, str):
        return pattern.sub(NUL_STANDIN, value) if pattern.search(value) else value
    if isinstance(value, dict):
        return {_replaced(k, pattern): _replaced(v, pattern) for k, v in cast("dict[Any, Any]", value).items()}
    if isinstance(value, list | tuple):
        return [_replaced(v, pattern) for v in cast("list[Any]", value)]
    return value


def storable(value: Any) -> Any:
    """``value`` with U+0000 and every lone surrogate replaced by U+FFFD (``UNSTORABLE``), at any depth."""
    return _replaced(value, UNSTORABLE)


def whole_characters(value: Any) -> Any:
    """``value`` with every lone UTF-16 surrogate replaced by U+FFFD, at any depth. A model cut off between
    the halves of an emoji sends one (JSON ``"\\ud83d"``), and so may a tool; it cannot be encoded as
    UTF-8, so a reply holding one could be neither streamed nor saved. U+0000 is left: JSON carries it."""
    return _replaced(value, LONE_SURROGATE)


class StorableString(TypeDecorator[str]):
    """``String`` (a length, as ``StorableString(200)``) whose values are made ``storable``."""

    impl = String
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Any) -> str | None:
        return None if value is None else storable(value)


class StorableText(StorableString):
    """``Text`` whose values are made ``storable``."""

    impl = Text
    cache_ok = True


class StorableJSON(TypeDecorator[Any]):
    """``JSON`` whose strings are made ``storable`` before it is encoded."""

    impl = JSON
    cache_ok = True
    should_evaluate_none = True  # as ``JSON()``: Python None is stored as JSON null

    def process_bind_param(self, value: Any, dialect: Any) -> Any:
        return storable(value)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
    updated_at: Mapped[datetime] = mapped_column(
        UTCDateTime(), default=utcnow, onupdate=utcnow, nullable=False
    )


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute(f"PRAGMA busy_timeout={int(BUSY_TIMEOUT_S * 1000)}")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()
    register_sqlite_functions(dbapi_conn)  # the search index triggers call them


class NulRefused(ValueError):
    """SQLite's answer to a value holding U+0000, made PostgreSQL's: it refuses such text in any parameter
    (SQLSTATE 22021), where SQLite stored it. The error handlers answer it as they answer PostgreSQL (a
    422), so a client's text is refused, and nothing written, on both databases alike."""

    sqlstate = "22021"


def _bound_values(parameters: Any) -> Iterator[Any]:
    """Every value of a statement's parameters: one row (a tuple or a dict) or many (a list of them)."""
    for item in parameters.values() if isinstance(parameters, dict) else parameters or ():
        if isinstance(item, tuple | list):
            yield from item
        elif isinstance(item, dict):
            yield from cast("dict[str, Any]", item).values()
        else:
            yield item


def _refuse_nul(_conn: Any, _cursor: Any, _statement: str, parameters: Any, _context: Any, _many: bool) -> None:
    """Refuse a statement with U+0000 in a text parameter. Text that may hold it (a model's, a tool's) is
    made ``storable`` before it gets here; what still holds it is a client's."""
    for value in _bound_values(parameters):
        if isinstance(value, str) and NUL in value:
            raise NulRefused("the NUL character (\\u0000) cannot be stored")


def _no_autocheckpoint(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA wal_autocheckpoint=0")  # checkpoints run on a worker thread (``db_sqlite``)
    cur.execute(f"PRAGMA journal_size_limit={JOURNAL_SIZE_LIMIT}")
    cur.close()


# How long a request waits for a pooled connection before it fails. SQLAlchemy's 30 s failed chats when
# hundreds started at once on a busy worker (bench/scale_out.py, docs/benchmarks.md): each holds a
# connection only for a short transaction, but on a saturated event loop the queue for one grows long.
POOL_TIMEOUT_S = 120.0


# A pooled PostgreSQL connection idle for longer than this is pinged before it is handed out; one used
# more recently is trusted. SQLAlchemy's ``pool_pre_ping`` pinged on every checkout, and the asyncpg
# dialect's ping is three round trips (BEGIN, an empty query, ROLLBACK): 0.45 ms of a 4 ms document update
# on PostgreSQL (bench/documents.py, docs/benchmarks.md). A server restart or a dropped connection is
# still caught before use for connections that sat idle; one that breaks within this window fails its
# request once, and SQLAlchemy then discards every connection opened before the failure.
IDLE_PING_AFTER_S = 10.0


def _ping_idle_connections(engine: AsyncEngine) -> None:
    """Stamp each connection when it returns to the pool; at checkout, ping it if it has sat there for
    longer than ``IDLE_PING_AFTER_S`` and, if the ping fails, have the pool replace it (``DisconnectionError``
    is the pool's documented signal to discard a connection and take another)."""

    def checkin(_dbapi_conn: Any, record: Any) -> None:
        if record is not None:
            record.info["idle_since"] = time.monotonic()

    def checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        since = record.info.pop("idle_since", None)
        if since is None or time.monotonic() - since <= IDLE_PING_AFTER_S:
            return
        try:
            engine.dialect.do_ping(dbapi_conn)
        except Exception as error:
            raise exc.DisconnectionError("the pooled connection is gone") from error

    event.listen(engine.sync_engine.pool, "checkin", checkin)
    event.listen(engine.sync_engine.pool, "checkout", checkout)


def make_engine(url: str) -> AsyncEngine:
    database = make_url(url).database
    file_backed = url.startswith("sqlite") and bool(database) and database != ":memory:"
    if file_backed:
        # aiosqlite underneath, minus the thread hops that buy nothing and the writers' busy waits
        engine = create_async_engine(url, async_creator=loop_connection_factory(str(database)))
    elif url.startswith("sqlite"):
        engine = create_async_engine(url)
    else:
        engine = create_async_engine(url, pool_timeout=POOL_TIMEOUT_S)
        _ping_idle_connections(engine)
    if engine.dialect.name == "sqlite":
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas)
        event.listen(engine.sync_engine, "before_cursor_execute", _refuse_nul)
    if file_backed:
        event.listen(engine.sync_engine, "connect", _no_autocheckpoint)
    return engine


def _reads_engine(engine: AsyncEngine) -> AsyncEngine:
    """The engine read sessions use: on PostgreSQL the same pool in autocommit mode (no BEGIN / COMMIT
    around reads; asyncpg switches it per connection without a round trip, and the pool switches it back
    when the connection returns). SQLite starts no transaction for a SELECT anyway, and switching the
    mode there would hop to the connection's thread twice."""
    return engine.execution_options(isolation_level="AUTOCOMMIT") if engine.dialect.name == "postgresql" else engine


class Database:
    def __init__(self, url: str) -> None:
        self.url = url
        self.engine = make_engine(url)
        self.sessionmaker = async_sessionmaker(self.engine, expire_on_commit=False)
        self._read_sessionmaker = async_sessionmaker(_reads_engine(self.engine), expire_on_commit=False)
        # SQLite deployments are one server process, so this process sees every write (``readcache``).
        self.cache = ReadCache(enabled=self.dialect == "sqlite")
        if self.cache.enabled:
            self.cache.attach(self.engine)

    @property
    def dialect(self) -> str:
        return self.engine.dialect.name

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session that commits on success and rolls back on error."""
        async with self.sessionmaker() as session:
            try:
                yield session
                await session.commit()
            except BaseException:
                await session.rollback()
                raise

    @asynccontextmanager
    async def read_session(self) -> AsyncIterator[AsyncSession]:
        """A session for a few small indexed reads on a hot path (the caller's identity, what a chat turn
        needs), never for writes. On SQLite its SELECTs run on the event loop instead of hopping to the
        connection's thread (``db_sqlite``); on PostgreSQL they run without a transaction (each its own
        snapshot), which saves a BEGIN and a COMMIT round trip per session. Not for searches or listings
        that scan."""
        with inline_reads():
            async with self._read_sessionmaker() as session:
                yield session

    async def dispose(self) -> None:
        await self.engine.dispose()
