"""PostgreSQL for the test suite: when ``AGENTLOFT_TEST_POSTGRES_URL`` names a server (any database on it that
the role may connect to, e.g. ``postgresql+asyncpg://agentloft_test:pw@127.0.0.1/postgres``), the live
servers run on PostgreSQL instead of SQLite, so the same tests prove the same code works on both.

The role needs CREATEDB. The schema is migrated once into a template database; each test gets its own
database cloned from it (``CREATE DATABASE … TEMPLATE``, fast because the template is small), dropped when
the test ends. Everything runs through asyncpg (the app's own driver) in a private event loop on a worker
thread, so the helpers work from plain and from async tests alike.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any, TypeVar

import asyncpg
import pytest
from sqlalchemy.engine import URL, make_url

ENV = "AGENTLOFT_TEST_POSTGRES_URL"
T = TypeVar("T")

_names = itertools.count()
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pg-test")


def server_url() -> str | None:
    """The admin URL from the environment, or None when the suite runs on SQLite."""
    return os.environ.get(ENV) or None


def _url(url: str) -> URL:
    return make_url(url)


def database_url(name: str) -> str:
    """The app's (SQLAlchemy, asyncpg) URL for database ``name`` on the test server."""
    base = _url(server_url() or "")
    return base.set(drivername="postgresql+asyncpg", database=name).render_as_string(hide_password=False)


def _connect_kwargs(url: str) -> dict[str, Any]:
    u = _url(url)
    return {"host": u.host or u.query.get("host"), "port": u.port, "user": u.username,
            "password": u.password, "database": u.database}


def _run(factory: Callable[[], Awaitable[T]]) -> T:
    """Run a coroutine to completion in a fresh loop on the worker thread (never the caller's loop)."""
    return _pool.submit(lambda: asyncio.run(factory())).result()  # type: ignore[arg-type]


def to_dollar_params(query: str) -> str:
    """Translate SQLite/DB-API ``?`` placeholders to asyncpg's ``$1, $2, …``, leaving quoted text alone."""
    counter = itertools.count(1)
    parts = re.split(r"('(?:[^']|'')*'|\"(?:[^\"]|\"\")*\")", query)
    return "".join(p if i % 2 else re.sub(r"\?", lambda _m: f"${next(counter)}", p) for i, p in enumerate(parts))


def query(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on the database at ``url``; rows come back as tuples, as ``sqlite3`` gives them."""

    async def main() -> list[tuple[Any, ...]]:
        conn = await asyncpg.connect(**_connect_kwargs(url))
        try:
            return [tuple(r) for r in await conn.fetch(to_dollar_params(sql), *params)]
        finally:
            await conn.close()

    return _run(main)


def explain(url: str, sql: str, params: tuple[Any, ...], settings: dict[str, str]) -> dict[str, Any]:
    """The plan PostgreSQL makes for one statement as the app ran it (asyncpg's ``$n`` placeholders and
    its parameters, e.g. from ``tests.support.executed_statements``), in a transaction with ``settings``
    set as the app sets them: ``EXPLAIN (FORMAT JSON)``'s top plan node, not run."""

    async def main() -> dict[str, Any]:
        conn = await asyncpg.connect(**_connect_kwargs(url))
        try:
            async with conn.transaction():
                for key, value in settings.items():
                    await conn.execute("SELECT set_config($1, $2, true)", key, value)
                plan = await conn.fetchval("EXPLAIN (FORMAT JSON) " + sql, *params)
        finally:
            await conn.close()
        return json.loads(plan)[0]["Plan"]

    return _run(main)


def plan_nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every node of an ``explain`` plan, the top one first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


# An autovacuum worker may be visiting the template (CREATE fails) or a test database (DROP … FORCE may not
# end it without superuser rights); it is gone within moments, so these statements are retried.
_BUSY = (asyncpg.exceptions.ObjectInUseError, asyncpg.exceptions.InsufficientPrivilegeError)


def _admin(statement: str, attempts: int = 50) -> None:
    """A statement that cannot run inside a transaction (CREATE/DROP DATABASE), on the admin database."""

    async def main() -> None:
        conn = await asyncpg.connect(**_connect_kwargs(server_url() or ""))
        try:
            for attempt in range(attempts):
                try:
                    await conn.execute(statement)
                    return
                except _BUSY:
                    if attempt == attempts - 1:
                        raise
                    await asyncio.sleep(0.1)
        finally:
            await conn.close()

    _run(main)


def new_name(prefix: str = "t") -> str:
    return f"agentloft_{prefix}_{os.getpid()}_{next(_names)}"


def create_database(name: str, template: str | None = None) -> str:
    """Create ``name`` (a clone of ``template``, or empty) and return the app's URL for it."""
    clone = f' TEMPLATE "{template}"' if template else ""
    _admin(f'CREATE DATABASE "{name}"{clone}')
    return database_url(name)


def drop_database(name: str) -> None:
    """Drop ``name`` even if a stopped server's pool still holds a connection."""
    _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def scratch_database(prefix: str) -> Iterator[str]:
    """An empty database of one test's own (its app URL), dropped when the test ends; the test is skipped
    when the suite runs without PostgreSQL (the PostgreSQL-only halves)."""
    if not server_url():
        pytest.skip(f"PostgreSQL half: set {ENV}")
    name = new_name(prefix)
    url = create_database(name)
    try:
        yield url
    finally:
        drop_database(name)


def name_of(url: str) -> str:
    return _url(url).database or ""


def is_postgres(url: str | None) -> bool:
    return bool(url) and _url(url or "").get_backend_name() == "postgresql"


class TestDatabases:
    """The databases one test created. A server restarted on the same data directory gets the same
    database back, as on SQLite it finds the same file; the first clone is the test's main database
    (the one ``AGENTLOFT_DATABASE_URL`` names, so code that builds settings itself finds it too)."""

    __test__ = False  # not a test class, whatever its name says

    def __init__(self, template: str | None) -> None:
        self.template = template
        self.main: str | None = None
        self.main_claimed = False
        self.by_dir: dict[str, str] = {}
        self.created: list[str] = []

    def create(self, *, empty: bool = False) -> str:
        name = new_name()
        url = create_database(name, None if empty else self.template)
        self.created.append(name)
        return url

    def create_main(self) -> str:
        self.main = self.create()
        return self.main

    def for_dir(self, data_dir: os.PathLike[str] | str, *, empty: bool) -> str:
        """The database of the server whose data directory is ``data_dir``; empty when there is no
        template to copy (a first start that must run the migrations itself)."""
        key = os.fspath(data_dir)
        if key not in self.by_dir:
            if not empty and self.main and not self.main_claimed:
                self.main_claimed = True
                self.by_dir[key] = self.main
            else:
                self.by_dir[key] = self.create(empty=empty)
        return self.by_dir[key]

    def drop_all(self) -> None:
        for name in reversed(self.created):
            drop_database(name)
        self.created.clear()


current: TestDatabases | None = None
