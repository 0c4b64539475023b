"""What the benchmarks share: serving agentloft in its own process, spawning helper processes, waiting
for a server to answer. Each benchmark runs the model, the app and the client as separate processes so
the app's resident memory and CPU are its own."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]


def serve_app(port: int, data_dir: str) -> None:
    """Run agentloft on ``port`` with an empty instance in ``data_dir`` (blocks; for a child process)."""
    import uvicorn

    from agentloft.app import create_app
    from agentloft.core.settings import load_settings

    settings = load_settings(data_dir=Path(data_dir), env="test", secret_key="bench-secret", create_defaults=False)
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def spawn(module: str, *args: str) -> subprocess.Popen[bytes]:
    """Start ``python -m <module> <args>`` from the repository root."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=ROOT, env=env)


async def wait_up(url: str, limit_s: float = 60) -> None:
    """Poll ``url`` until it answers at all (any status)."""
    deadline = time.monotonic() + limit_s
    async with httpx.AsyncClient() as client:
        while time.monotonic() < deadline:
            try:
                await client.get(url)
                return
            except httpx.HTTPError:
                await asyncio.sleep(0.1)
    raise RuntimeError(f"{url} did not come up")
