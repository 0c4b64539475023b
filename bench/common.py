"""What the benchmarks share: serving agentloft in its own process, spawning helper processes, waiting
for a server to answer. Each benchmark runs the model, the app and the client as separate processes so
the app's resident memory and CPU are its own."""

from __future__ import annotations

import asyncio
import os
import signal
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

    # one bench user runs many chats at once: no per-user limit
    settings = load_settings(data_dir=Path(data_dir), env="test", secret_key="bench-secret", create_defaults=False,
                             max_running_chats_per_user=0)
    uvicorn.run(create_app(settings), host="127.0.0.1", port=port, log_level="warning", access_log=False)


def spawn(
    module: str, *args: str, src: str | None = None, env: dict[str, str] | None = None,
    python: str = sys.executable,
) -> subprocess.Popen[bytes]:
    """Start ``python -m <module> <args>`` from the repository root; with ``src``, a directory whose
    ``agentloft`` package it imports instead of the installed one (another version, to compare with);
    ``env``: variables to add (a setting of the app's own); ``python``: another interpreter (another
    tree's virtualenv, with the dependencies of that version)."""
    path = os.pathsep.join([*([src] if src else []), str(ROOT)])
    return subprocess.Popen([python, "-m", module, *args], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": path, **(env or {})})


def stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    """Stop the helper processes as Ctrl-C would, all at once, and kill any that has not ended in 10 s."""
    for p in procs:
        p.send_signal(signal.SIGINT)
    for p in procs:
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


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


async def admin_with_fake_model(client: httpx.AsyncClient, fake_url: str) -> tuple[dict[str, str], int]:
    """Sign up the first account (an admin) on the app behind ``client`` and make the fake model at
    ``fake_url`` the default model; returns the CSRF header the client's writes need and the model's id."""
    await client.get("/api/health")
    csrf = {"X-CSRF-Token": client.cookies.get("agentloft_csrf") or ""}
    r = await client.post("/api/auth/signup", json={"username": "bench", "password": "password123"}, headers=csrf)
    r.raise_for_status()
    csrf = {"X-CSRF-Token": client.cookies.get("agentloft_csrf") or ""}
    r = await client.post("/api/admin/models", headers=csrf, json={
        "name": "Fake", "provider": "openai", "baseUrl": f"{fake_url}/v1", "model": "fake", "isDefault": True})
    r.raise_for_status()
    return csrf, int(r.json()["id"])
