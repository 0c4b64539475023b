"""Shared fixtures: a fresh live server per test (on a copy of a migrated SQLite file), the scripted fake
model server, and signed-in clients for an admin and for plain users."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentloft import migrate
from tests.fakes.openai_server import FakeModel, FakeModelServer
from tests.support import ApiClient, LiveApp, start_app

_counter = itertools.count()


@pytest.fixture(scope="session")
def template_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "agentloft.db"
    migrate.upgrade(f"sqlite+aiosqlite:///{path}")
    return path


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
