"""Shared fixtures: a fresh live server per test (on a copy of a migrated SQLite file, or with
``AGENTLOFT_TEST_POSTGRES_URL`` set, on its own PostgreSQL database cloned from a migrated template; with
``AGENTLOFT_TEST_REDIS_URL`` set, with its buffers and leases on Redis under its own key prefix), the
scripted fake model server, and signed-in clients for an admin and for plain users."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from agentloft.auth import service as auth_service
from agentloft.core import migrate
from tests import redis_db
from tests.fakes.openai_server import FakeModel, FakeModelServer
from tests.pg import database as pg
from tests.support import ApiClient, LiveApp, start_app

# the trace fixtures (receiver, traced) for the tests of every folder that reads spans
pytest_plugins = ["tests.tracing_support"]

_counter = itertools.count()


def _cheap_password_hashes() -> None:
    """Hash test passwords with argon2 at its lowest cost. The product's cost (~0.2 s of CPU and 64 MiB per
    hash, by design) was paid two to four times by nearly every test (the admin's sign-up, each user's
    creation and sign-in): on a busy 2-CPU machine ``tests/usage tests/groups`` took 332 s with it and 26 s
    without. Verification reads the cost from each hash, so hashes made elsewhere still verify."""
    auth_service._hasher = PasswordHasher(time_cost=1, memory_cost=1024, parallelism=1)
    auth_service._DUMMY_HASH = auth_service._hasher.hash("a password no account has")


def pytest_configure(config: pytest.Config) -> None:
    _cheap_password_hashes()
    config.addinivalue_line(
        "markers", "sqlite_only(reason): tests SQLite itself (PRAGMAs, FTS5); skipped only in the PostgreSQL pass"
    )


def _uses_browser(item: pytest.Item) -> bool:
    return item.get_closest_marker("e2e") is not None or "browser" in getattr(item, "fixturenames", ())


# Fixtures through which a test reaches the pass's database; a test that uses none of them (and whose module
# does not reach PostgreSQL or Redis itself through ``tests.pg`` / ``tests.redis_db``) runs the same code on
# every pass.
_DATABASE_FIXTURES = frozenset({"template_db", "pg_template", "blank_database_url"})


def _reaches_backends(item: pytest.Item) -> bool:
    if _DATABASE_FIXTURES & set(getattr(item, "fixturenames", ())):
        return True
    module = getattr(item, "module", None)
    return module is not None and any(value is pg or value is redis_db for value in vars(module).values())


def _only_backend_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In the PostgreSQL and Redis passes, deselect the tests that never reach a database or Redis: they
    ran in the SQLite pass, and would run the very same code again."""
    kept, dropped = [], []
    for item in items:
        (kept if _reaches_backends(item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Browser tests run last: Playwright's sync API keeps an event loop running in the main thread until
    the session ends, and async tests after it could not start their own. In the PostgreSQL pass, run only
    the tests that reach a database or Redis, and skip what only makes sense on SQLite, saying why; on
    SQLite everything runs."""
    items.sort(key=_uses_browser)  # stable: the order is otherwise kept
    if not pg.server_url():
        return
    _only_backend_tests(config, items)
    for item in items:
        marker = item.get_closest_marker("sqlite_only")
        if marker is not None:
            reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "SQLite only")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {reason}"))


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str | None]:
    """On PostgreSQL: a database migrated once, cloned for every test. None on SQLite."""
    if not pg.server_url():
        yield None
        return
    name = pg.new_name("template")
    url = pg.create_database(name)
    try:
        migrate.upgrade(url)
        yield name
    finally:
        pg.drop_database(name)


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory, pg_template: str | None) -> Path:
    path = tmp_path_factory.mktemp("template") / "agentloft.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    return path


@pytest.fixture(autouse=True)
def _pg_databases(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """On PostgreSQL, give the test its own databases (see ``tests.pg.database.TestDatabases``) and drop
    them afterwards. Does nothing on SQLite."""
    if not pg.server_url():
        yield
        return
    template = request.getfixturevalue("pg_template") if "template_db" in request.fixturenames else None
    pg.current = pg.TestDatabases(template)
    if template:
        monkeypatch.setenv("AGENTLOFT_DATABASE_URL", pg.current.create_main())
    try:
        yield
    finally:
        databases, pg.current = pg.current, None
        databases.drop_all()


@pytest.fixture(autouse=True)
def _redis_prefix() -> Iterator[None]:
    """With a test Redis, give the test's servers their own key prefix and delete its keys afterwards.
    Does nothing without one."""
    url = redis_db.server_url()
    if not url:
        yield
        return
    redis_db.current = redis_db.new_prefix()
    try:
        yield
    finally:
        prefix, redis_db.current = redis_db.current, None
        redis_db.delete_prefix(url, prefix)


@pytest.fixture
def blank_database_url(tmp_path: Path) -> Iterator[str]:
    """An empty database of the kind this pass runs on (PostgreSQL in the PostgreSQL pass, else a SQLite
    file), for tests that migrate it themselves."""
    if not pg.server_url():
        yield f"sqlite+aiosqlite:///{tmp_path / 'blank.db'}"
        return
    name = pg.new_name("blank")
    url = pg.create_database(name)
    try:
        yield url
    finally:
        pg.drop_database(name)


@pytest.fixture(scope="session")
def fake_model_server() -> Iterator[FakeModelServer]:
    server = FakeModelServer()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def fake_model(fake_model_server: FakeModelServer) -> Iterator[FakeModel]:
    fake_model_server.fake.reset()
    yield fake_model_server.fake
    fake_model_server.fake.reset()


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    live = start_app(tmp_path / "data", template_db)
    yield live
    live.stop()


@pytest.fixture
def anon(app: LiveApp) -> Iterator[ApiClient]:
    with app.client() as c:
        yield c


@pytest.fixture
def admin(app: LiveApp) -> Iterator[ApiClient]:
    """The first account on the instance, hence an admin."""
    with app.client() as c:
        c.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
        yield c


@pytest.fixture
def make_user(app: LiveApp, admin: ApiClient) -> Iterator[Callable[..., ApiClient]]:
    """Create an account through the admin API and return a client signed in as it."""
    clients: list[ApiClient] = []

    def make(username: str | None = None, role: str = "user") -> ApiClient:
        name = username or f"user{next(_counter)}"
        admin.ok("POST", "/api/admin/users", json={"username": name, "password": "password123", "role": role})
        c = app.client()
        c.ok("POST", "/api/auth/login", json={"username": name, "password": "password123"})
        clients.append(c)
        return c

    yield make
    for c in clients:
        c.close()


@pytest.fixture
def user(make_user: Callable[..., ApiClient]) -> ApiClient:
    return make_user("alice")


@pytest.fixture
def model_id(admin: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel) -> int:
    """A default model configuration pointing at the fake model server."""
    body = admin.ok(
        "POST",
        "/api/admin/models",
        json={"name": "Fake", "provider": "openai", "baseUrl": fake_model_server.base_url,
              "model": "fake-model", "isDefault": True},
    )
    return body["id"]
