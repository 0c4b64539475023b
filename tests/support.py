"""Test helpers: a live agentloft server on real SQLite (or PostgreSQL when ``AGENTLOFT_TEST_POSTGRES_URL`` is
set, see ``tests/pg``; with ``AGENTLOFT_TEST_REDIS_URL`` too, on Redis as several workers are, see
``tests/redis_db``), and an HTTP client that behaves like the pages (keeps cookies, echoes the CSRF
cookie in ``X-CSRF-Token`` on writes)."""

from __future__ import annotations

import asyncio
import inspect
import shutil
import sqlite3
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import event, insert, text
from sqlalchemy.engine import Engine

from agentloft.app import create_app
from agentloft.auth.models import User
from agentloft.cli import proxy_options
from agentloft.core import textsearch
from agentloft.core.db import Database, utcnow
from agentloft.core.settings import load_settings
from agentloft.core.textsearch import register_sqlite_functions
from tests import redis_db
from tests.fakes.openai_server import ThreadedServer
from tests.pg import database as pg

UNSAFE = {"POST", "PUT", "PATCH", "DELETE"}


class ApiClient(httpx.Client):
    def __init__(self, base_url: str, *, csrf: bool = True, **kw: Any) -> None:
        hooks = {"request": [self._add_csrf]} if csrf else {}
        super().__init__(base_url=base_url, timeout=30, event_hooks=hooks, **kw)

    def __enter__(self) -> ApiClient:
        # ``LiveApp.client`` already made a request (which opens the client); entering is still allowed.
        return self

    def _add_csrf(self, request: httpx.Request) -> None:
        token = self.cookies.get("agentloft_csrf")
        if request.method in UNSAFE and token and "x-csrf-token" not in request.headers:
            request.headers["X-CSRF-Token"] = token

    def ok(self, method: str, url: str, status: int | tuple[int, ...] = (200, 201, 204), **kw: Any) -> Any:
        """Make a request, assert its status, return the decoded JSON body (or None)."""
        resp = self.request(method, url, **kw)
        wanted = (status,) if isinstance(status, int) else status
        assert resp.status_code in wanted, f"{method} {url}: {resp.status_code} {resp.text}"
        return resp.json() if resp.content else None


@dataclass
class LiveApp:
    url: str
    data_dir: Path
    server: ThreadedServer
    database_url: str | None = None  # set when the server runs on PostgreSQL

    @property
    def db_path(self) -> Path:
        return self.data_dir / "agentloft.db"

    def client(self, **kw: Any) -> ApiClient:
        c = ApiClient(self.url, **kw)
        c.get("/api/health")  # picks up the CSRF cookie, as a page load would
        return c

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Read the database directly (to check what was stored, not what the API says), or write to it
        (committed) to set up a state the API cannot reach. Placeholders are ``?`` on both databases."""
        if pg.is_postgres(self.database_url):
            return pg.query(self.database_url or "", query, params)
        con = sqlite3.connect(self.db_path)
        register_sqlite_functions(con)  # the search index triggers call them
        try:
            with con:
                return con.execute(query, params).fetchall()
        finally:
            con.close()

    def stamp(self, when: datetime) -> object:
        """``when`` (timezone-aware) as ``sql`` binds it for a timestamp column, stored as the app stores
        one: PostgreSQL takes the aware value; SQLite holds naive UTC text (``core.db.UTCDateTime``). Tests
        compute times in Python rather than with one database's date functions."""
        if pg.is_postgres(self.database_url):
            return when
        return when.astimezone(UTC).replace(tzinfo=None).isoformat(" ", "microseconds")

    def stop(self) -> None:
        self.server.stop()


def start_app(data_dir: Path, template_db: Path | None = None, **settings: Any) -> LiveApp:
    data_dir.mkdir(parents=True, exist_ok=True)
    if pg.current is not None and "database_url" not in settings:
        settings["database_url"] = pg.current.for_dir(data_dir, empty=template_db is None)
    if template_db is not None and not (data_dir / "agentloft.db").exists():
        shutil.copy(template_db, data_dir / "agentloft.db")
    # Defaults (tools, the Assistant) and generated chat titles (a model call of their own after a first
    # reply) are off unless a test asks for them, so counts and queued model replies in tests stay exact.
    values: dict[str, Any] = {
        "data_dir": data_dir, "env": "test", "secret_key": "test-secret-key", "create_defaults": False,
        "generate_titles": False,
    }
    if redis_db.current is not None:  # the test's own keys on the test Redis, shared by its servers
        values.update(redis_url=redis_db.server_url(), redis_prefix=redis_db.current)
    values.update(settings)
    loaded = load_settings(**values)
    # Served as ``agentloft serve`` serves it: forwarded headers believed only from the named proxies.
    server = ThreadedServer(create_app(loaded), **proxy_options(loaded)).start()
    return LiveApp(url=server.url, data_dir=data_dir, server=server, database_url=settings.get("database_url"))


def running_app(tmp_path: Path, template_db: Path, **settings: Any) -> Iterator[LiveApp]:
    """A test's own live app with ``settings``, stopped afterwards: the body of an ``app`` fixture that
    overrides the shared one (``yield from running_app(tmp_path, template_db, some_limit=2)``)."""
    live = start_app(tmp_path / "data", template_db, **settings)
    yield live
    live.stop()


def signup(client: ApiClient, username: str, password: str = "password123") -> dict[str, Any]:
    return client.ok("POST", "/api/auth/signup", json={"username": username, "password": password})


def login(client: ApiClient, username: str, password: str = "password123") -> dict[str, Any]:
    return client.ok("POST", "/api/auth/login", json={"username": username, "password": password})


async def file_database(path: Path, *statements: str) -> Database:
    """The app's ``Database`` on a new SQLite file, with ``statements`` run and committed first."""
    db = Database(f"sqlite+aiosqlite:///{path}")
    async with db.session() as s:
        for statement in statements:
            await s.execute(text(statement))
    return db


async def add_user(db: Database, user_id: int = 1) -> None:
    """An account row (``u<id>``, no usable password) for service-level tests on a migrated database."""
    now = utcnow()
    async with db.session() as s:
        await s.execute(insert(User).values(id=user_id, username=f"u{user_id}", password_hash="x", role="user",
                                            disabled=False, created_at=now, updated_at=now))


@contextmanager
def executed_statements(target: Any = Engine) -> Iterator[list[tuple[str, Any]]]:
    """Each statement run through ``target`` while the block runs, with its parameters, in order. The
    default, every engine, includes a live app's own (it runs in this process)."""
    seen: list[tuple[str, Any]] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append((statement, parameters))

    event.listen(target, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(target, "before_cursor_execute", record)


@contextmanager
def folded_characters() -> Iterator[list[int]]:
    """How many characters Python folds (``textsearch.fold`` and ``fold_each``) while the block runs, as
    the one item of the list yielded; a live app's own folding included (it runs in this process)."""
    count = [0]
    whole, each = textsearch.fold, getattr(textsearch, "fold_each", None)

    def counted_fold(value: str) -> str:
        count[0] += len(value)
        return whole(value)

    def counted_each(value: str) -> str:
        count[0] += len(value)
        assert each is not None
        return each(value)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(textsearch, "fold", counted_fold)
        patch.setattr(textsearch, "fold_each", counted_each, raising=False)
        yield count


async def run_sql(url: str, *statements: str) -> list[Any]:
    """Run ``statements`` in one transaction on the database at ``url`` (a migration's test reads and
    writes its tables by hand); the rows of the last one, or [] when it returns none."""
    db = Database(url)
    try:
        async with db.session() as s:
            rows: list[Any] = []
            for statement in statements:
                result = await s.execute(text(statement))
                rows = list(result.all()) if result.returns_rows else []
            return rows
    finally:
        await db.dispose()


async def wait_until(condition: Callable[[], bool | Awaitable[bool]], *, limit_s: float = 5.0,
                     every_s: float = 0.005) -> None:
    """Return once ``condition()`` holds; fail the test (TimeoutError) after ``limit_s``. For states with
    no event to wait on (another process's, a buffer's contents): it is checked every ``every_s``."""
    async with asyncio.timeout(limit_s):
        while True:
            result = condition()
            if await result if inspect.isawaitable(result) else result:
                return
            await asyncio.sleep(every_s)


def same_answer(a: httpx.Response, b: httpx.Response) -> bool:
    """Whether two error answers say the same, each with the id of its own request left out (every error
    body carries ``requestId``, which tells two requests apart and nothing else)."""

    def said(r: httpx.Response) -> dict[str, Any]:
        body = r.json()
        return {**body, "error": {k: v for k, v in body["error"].items() if k != "requestId"}}

    return said(a) == said(b)
