"""Several workers on one PostgreSQL and one Redis. Two kinds of test live here:

- in one process, two live apps sharing a database and a Redis key prefix (``twin``): every request of
  a user can go to either, as behind a load balancer;
- real ``agentloft serve`` processes (``tests/scale/test_processes.py``), which can be killed.

They need ``AGENTLOFT_TEST_POSTGRES_URL`` and ``AGENTLOFT_TEST_REDIS_URL`` (the CI's third pass sets both);
without them they are skipped, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import redis_db
from tests.pg import database as pg
from tests.support import ApiClient, LiveApp, start_app

NEEDS = "needs AGENTLOFT_TEST_POSTGRES_URL and AGENTLOFT_TEST_REDIS_URL (the PostgreSQL + Redis pass)"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if pg.server_url() and redis_db.server_url():
        return
    for item in items:
        if "tests/scale/" in str(item.path).replace("\\", "/"):
            item.add_marker(pytest.mark.skip(reason=NEEDS))


@pytest.fixture
def twin(app: LiveApp, tmp_path: Path) -> Iterator[LiveApp]:
    """A second worker of ``app``: same database, same Redis."""
    other = start_app(tmp_path / "twin", database_url=app.database_url)
    yield other
    other.stop()


def on(app: LiveApp, client: ApiClient) -> ApiClient:
    """The same signed-in browser (its cookies) talking to another worker."""
    other = ApiClient(app.url, cookies=client.cookies)
    return other
