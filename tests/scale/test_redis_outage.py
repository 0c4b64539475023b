"""Redis with a password and TLS (``rediss://``), then gone, then back: requests that need it answer 503
with a clear error while it is away, and the worker carries on by itself once it returns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.chat.helpers import chat, make_agent
from tests.fakes.openai_server import FakeModel, FakeModelServer, text
from tests.scale.processes import PrivateRedis
from tests.support import ApiClient, LiveApp, signup, start_app


@pytest.fixture
def private_redis(tmp_path: Path) -> Iterator[PrivateRedis]:
    if not PrivateRedis.available():
        pytest.skip("needs Debian's redis-server")
    server = PrivateRedis(tmp_path).start()
    yield server
    server.stop()


def test_a_worker_answers_503_while_redis_is_away_and_recovers_by_itself(
    tmp_path: Path, template_db: Path, private_redis: PrivateRedis, fake_model_server: FakeModelServer,
    fake_model: FakeModel,
) -> None:
    live: LiveApp = start_app(tmp_path / "data", template_db, redis_url=private_redis.url, redis_prefix="outage")
    try:
        with live.client() as admin:
            signup(admin, "admin")
            model = admin.ok("POST", "/api/admin/models", json={
                "name": "Fake", "provider": "openai", "baseUrl": fake_model_server.base_url, "model": "fake",
                "isDefault": True})
            make_agent(admin, "helper", modelId=model["id"])
            _talk(admin, fake_model, "over TLS, with a password")

            private_redis.stop()
            refused = admin.post("/api/agents/helper/chat", json={"message": "anyone?"})
            assert refused.status_code == 503
            error: dict[str, Any] = refused.json()["error"]
            assert error["code"] == "redis_unavailable" and "Redis" in error["message"]
            # what needs only the database still works, and the refused turn left no session behind
            sessions = admin.ok("GET", "/api/agent-sessions")["items"]
            assert [s["title"] for s in sessions] == ["over TLS, with a password"]

            private_redis.start()
            _talk(admin, fake_model, "back again")
    finally:
        live.stop()


def _talk(client: ApiClient, fake_model: FakeModel, message: str) -> None:
    fake_model.push(text(f"re: {message}"))
    assert chat(client, "helper", message).text == f"re: {message}"
