"""The sign-in throttle over real HTTP: a parallel burst gets exactly the limit checked, a client on
loopback cannot pick its address with ``X-Forwarded-For`` (also under ``agentloft serve`` itself), a
named proxy's header is believed, a refusal says when to retry, and the real user gets in from another
address after an attacker's failures. The rules with a clock in hand are in ``test_throttle.py``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.openai_server import free_port
from tests.support import LiveApp, signup, start_app

WRONG = {"username": "admin", "password": "wrong-password"}
RIGHT = {"username": "admin", "password": "password123"}
# Long enough that no window ends while a test runs, however loaded the machine is.
STEADY = {"login_backoff_seconds": 600.0}


@pytest.fixture
def launch(tmp_path: Path, template_db: Path) -> Iterator[Callable[..., LiveApp]]:
    """Start an app with the given settings and its first account ``admin``."""
    apps: list[LiveApp] = []

    def start(**settings: Any) -> LiveApp:
        app = start_app(tmp_path / "data", template_db, **settings)
        apps.append(app)
        with app.client() as c:
            signup(c, "admin")
        return app

    yield start
    for app in apps:
        app.stop()


def _login(url: str, body: dict[str, str], forwarded_for: str | None = None) -> httpx.Response:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    with httpx.Client(base_url=url, timeout=60) as c:
        return c.post("/api/auth/login", json=body, headers=headers)


async def _burst(url: str, body: dict[str, str], n: int, forwarded_for: str | None = None) -> list[int]:
    """``n`` sign-ins sent at once, each on its own connection."""
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    async with httpx.AsyncClient(base_url=url, timeout=60) as c:
        responses = await asyncio.gather(*(c.post("/api/auth/login", json=body, headers=headers) for _ in range(n)))
    return [r.status_code for r in responses]


def _throttled(r: httpx.Response) -> int:
    """Check a 429's shape; return its ``Retry-After`` in seconds."""
    assert r.status_code == 429, r.text
    error = r.json()["error"]
    assert error["code"] == "login_throttled"
    wait = int(r.headers["Retry-After"])
    assert wait >= 1 and f"try again in {wait} s" in error["message"]
    return wait


def test_parallel_burst_checks_exactly_the_limit(launch: Callable[..., LiveApp]) -> None:
    live = launch(**STEADY)
    statuses = asyncio.run(_burst(live.url, WRONG, 20))
    assert Counter(statuses) == {401: 5, 429: 15}
    # The account now waits, whoever asks and with whichever password.
    _throttled(_login(live.url, RIGHT))


def test_refusal_says_when_to_retry(launch: Callable[..., LiveApp]) -> None:
    live = launch(**STEADY)
    for _ in range(5):
        assert _login(live.url, WRONG).status_code == 401
    wait = _throttled(_login(live.url, WRONG))
    assert wait <= 600
    # Refused attempts do not push the wait further out.
    for _ in range(5):
        assert _throttled(_login(live.url, RIGHT)) <= wait


def test_loopback_client_cannot_spoof_its_address(launch: Callable[..., LiveApp]) -> None:
    """With no proxy named, ``X-Forwarded-For`` is just a header: a new one per request does not make a
    new address (uvicorn alone would have believed it from 127.0.0.1)."""
    live = launch(login_address_max_attempts=3, **STEADY)
    for i in range(3):
        r = _login(live.url, {"username": f"ghost{i}", "password": "x"}, forwarded_for=f"198.51.100.{i}")
        assert r.status_code == 401
    r = _login(live.url, {"username": "ghost9", "password": "x"}, forwarded_for="198.51.100.99")
    _throttled(r)
    _throttled(_login(live.url, RIGHT, forwarded_for="203.0.113.7"))


def test_named_proxy_forwarded_for_is_believed(launch: Callable[..., LiveApp]) -> None:
    live = launch(forwarded_allow_ips=["127.0.0.1"], login_address_max_attempts=3, **STEADY)
    for i in range(3):
        assert _login(live.url, {"username": f"ghost{i}", "password": "x"}, "198.51.100.1").status_code == 401
    _throttled(_login(live.url, {"username": "ghost9", "password": "x"}, "198.51.100.1"))
    # Another client behind the same proxy has its own count.
    assert _login(live.url, RIGHT, forwarded_for="198.51.100.2").status_code == 200


def test_real_user_gets_in_from_another_address_after_an_attack(launch: Callable[..., LiveApp]) -> None:
    """The rule that lets the user in: the account's wait after its 5 free attempts is tier 0's window
    (``login_backoff_seconds``, 3 s here), after which the account takes an attempt from any address
    again; the attacker's address has spent its ``login_address_max_attempts`` (6), the user's has not."""
    live = launch(forwarded_allow_ips=["127.0.0.1"], login_address_max_attempts=6, login_backoff_seconds=3.0)
    attacker, home = "198.51.100.66", "203.0.113.10"
    statuses = asyncio.run(_burst(live.url, WRONG, 6, forwarded_for=attacker))
    assert Counter(statuses) == {401: 5, 429: 1}  # the sixth found the account waiting
    r = _login(live.url, RIGHT, forwarded_for=home)
    if r.status_code == 429:  # still within the wait (unless checking the burst took the machine 3 s)
        wait = _throttled(r)
        assert wait <= 3
        time.sleep(wait)  # Retry-After is the condition: the account's tier-0 window has ended by then
        r = _login(live.url, RIGHT, forwarded_for=home)
    assert r.status_code == 200, r.text
    # The attacker's address stays out for the address window, for every account.
    assert _throttled(_login(live.url, WRONG, forwarded_for=attacker)) > 60
    assert _throttled(_login(live.url, {"username": "bob", "password": "x"}, forwarded_for=attacker)) > 60


# --- ``agentloft serve`` itself: the setting reaches uvicorn ------------------------------------------


def _serve(tmp_path: Path, **env: str) -> Iterator[str]:
    """Run ``agentloft serve`` on a fresh data dir with ``env`` on top of a clean environment (uvicorn's
    own ``FORWARDED_ALLOW_IPS=*`` is set too, to show that the app's setting wins over it)."""
    port = free_port()
    clean = {k: v for k, v in os.environ.items() if not k.startswith("AGENTLOFT_")}
    full = {**clean, "FORWARDED_ALLOW_IPS": "*", "AGENTLOFT_DATA_DIR": str(tmp_path / "served"),
            "AGENTLOFT_ENV": "test", "AGENTLOFT_SECRET_KEY": "test-secret-key", "AGENTLOFT_PORT": str(port),
            "AGENTLOFT_CREATE_DEFAULTS": "false", "AGENTLOFT_LOGIN_ADDRESS_MAX_ATTEMPTS": "2", **env}
    proc = subprocess.Popen([sys.executable, "-m", "agentloft.cli", "serve", "--log-level", "warning"],
                            env=full, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def _wait_up(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"agentloft serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
        try:
            httpx.get(f"{url}/api/health", timeout=5)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise RuntimeError("agentloft serve did not come up")


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[str]:
    env: dict[str, Any] = getattr(request, "param", {})
    yield from _serve(tmp_path, **env)


@pytest.mark.parametrize("served", [{}], indirect=True)
def test_serve_ignores_forwarded_for_by_default(served: str) -> None:
    for i in range(2):
        assert _login(served, {"username": f"ghost{i}", "password": "x"}, f"198.51.100.{i}").status_code == 401
    _throttled(_login(served, {"username": "ghost9", "password": "x"}, "198.51.100.99"))


@pytest.mark.parametrize("served", [{"AGENTLOFT_FORWARDED_ALLOW_IPS": '["127.0.0.1"]'}], indirect=True)
def test_serve_believes_the_named_proxy(served: str) -> None:
    for i in range(2):
        assert _login(served, {"username": f"ghost{i}", "password": "x"}, "198.51.100.1").status_code == 401
    _throttled(_login(served, {"username": "ghost9", "password": "x"}, "198.51.100.1"))
    assert _login(served, {"username": "ghost9", "password": "x"}, "198.51.100.2").status_code == 401
