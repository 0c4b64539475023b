"""A process without ``AGENTLOFT_REDIS_URL`` (the embedded default) never imports the Redis client library,
which costs about 6 MB resident and 50 ms of start-up; with a Redis configured, the app picks the
Redis-backed stores and the ``503 redis_unavailable`` handler as before.

Each probe runs in a fresh interpreter, so its imports are its own (the test suite itself imports Redis).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

# Built as ``agentloft serve`` builds it: the schema upgraded first, then ``create_app`` with migrations off;
# ``--lifespan`` runs the start-up hooks and the shutdown, as uvicorn does around serving.
PROBE = """
import asyncio, json, sys
from pathlib import Path
import agentloft.cli
from agentloft.app import build_runtime, create_app
from agentloft.core import migrate
from agentloft.core.settings import load_settings

data_dir, redis_url, lifespan = Path(sys.argv[1]), sys.argv[2] or None, sys.argv[3] == "--lifespan"
settings = load_settings(data_dir=data_dir, env="test", secret_key="probe", redis_url=redis_url,
                         redis_prefix="agentloft-import-probe")
settings.data_dir.mkdir(parents=True, exist_ok=True)
migrate.upgrade(settings.resolved_database_url)
app = create_app(settings, run_migrations=False)


async def start_and_stop() -> None:
    async with app.router.lifespan_context(app):
        assert app.state.runtime.redis is None


if lifespan:
    asyncio.run(start_and_stop())
else:
    build_runtime(settings)
handlers = sorted(f"{k.__module__}.{k.__name__}" for k in app.exception_handlers if isinstance(k, type))
print(json.dumps({"redis": "redis" in sys.modules, "handlers": handlers}))
"""


def _probe(data_dir: Path, redis_url: str, *, lifespan: bool) -> tuple[bool, list[str]]:
    """Whether the probe's process imported ``redis``, and the exception types its app handles."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOFT_")}
    args = [sys.executable, "-c", PROBE, str(data_dir), redis_url, "--lifespan" if lifespan else "--build"]
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    return bool(seen["redis"]), [str(h) for h in seen["handlers"]]


def test_an_app_without_redis_starts_and_stops_without_importing_it(tmp_path: Path) -> None:
    imported, handlers = _probe(tmp_path / "data", "", lifespan=True)
    assert imported is False
    assert "starlette.exceptions.HTTPException" in handlers
    assert not [h for h in handlers if h.startswith("redis.")]


def test_an_app_with_redis_imports_it_and_answers_503_for_its_outages(tmp_path: Path) -> None:
    """Built only (no command is sent before the first request), so no Redis server is needed."""
    imported, handlers = _probe(tmp_path / "data", "redis://127.0.0.1:9/0", lifespan=False)
    assert imported is True
    assert {"redis.exceptions.ConnectionError", "redis.exceptions.TimeoutError"} <= set(handlers)
