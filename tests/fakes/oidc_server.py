"""The test OpenID provider (``tests/fakes/oidc/server.mjs``, npm ``oidc-provider``) as a process on a free
port, its accounts (``ACCOUNTS``, as they start: a test may change them, ``OidcProvider.change_account``),
and a browser-less walk through its login form.

Its packages are installed by ``npm ci`` in ``tests/fakes/oidc`` (``scripts/test`` does it when they are
missing)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.fakes.openai_server import free_port

HERE = Path(__file__).parent / "oidc"
ACCOUNTS = {"alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}


class OidcProvider:
    """``node server.mjs PORT``, started once; ``ready`` waits for the line it prints when it listens."""

    def __init__(self) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        self._proc: subprocess.Popen[str] | None = None

    def start(self, timeout_s: float = 30.0, attempts: int = 3) -> OidcProvider:
        """Start it; a port another process took between ``free_port`` and node's bind is tried again on a
        new port (tests run beside other servers picking ports the same way)."""
        node = shutil.which("node")
        if node is None or not (HERE / "node_modules" / "oidc-provider").is_dir():
            raise RuntimeError("the test OpenID provider needs Node.js and `npm ci` in tests/fakes/oidc")
        for _ in range(attempts):
            lines = self._launch(node, timeout_s)
            if lines is None:
                return self
            if not any("EADDRINUSE" in line for line in lines):
                break
            self.port = free_port()
            self.issuer = f"http://127.0.0.1:{self.port}"
        raise RuntimeError("the test OpenID provider did not start:\n" + "".join(lines))

    def _launch(self, node: str, timeout_s: float) -> list[str] | None:
        """None once it listens; else what it printed before it exited or the time ran out."""
        self._proc = subprocess.Popen([node, "server.mjs", str(self.port)], cwd=HERE, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True)
        settled = threading.Event()  # it listens, or its output ended (it exited)
        lines: list[str] = []

        def read() -> None:
            assert self._proc is not None and self._proc.stdout is not None
            for line in self._proc.stdout:
                lines.append(line)
                if line.startswith("ready "):
                    settled.set()
            settled.set()

        threading.Thread(target=read, daemon=True).start()
        if settled.wait(timeout_s) and any(line.startswith("ready ") for line in lines):
            return None
        self.stop()
        return lines

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
            self._proc = None

    def register(self, client_id: str, secret: str, redirect_uris: list[str]) -> None:
        httpx.post(f"{self.issuer}/_test/clients", json={
            "client_id": client_id, "client_secret": secret, "redirect_uris": redirect_uris,
            "grant_types": ["authorization_code"], "response_types": ["code"],
            "token_endpoint_auth_method": "client_secret_basic",
        }).raise_for_status()

    def rotate_keys(self) -> None:
        httpx.post(f"{self.issuer}/_test/rotate").raise_for_status()

    def change_account(self, login: str, **change: Any) -> None:
        """Change ``login`` at the provider: ``groups=[...]``, ``removed=True`` (its login is refused from
        now on) or ``disabled=True`` (it signs in, and the provider sends the browser back with
        ``access_denied``). ``reset_accounts`` undoes every change."""
        httpx.post(f"{self.issuer}/_test/accounts/{login}", json=change).raise_for_status()

    def reset_accounts(self) -> None:
        httpx.post(f"{self.issuer}/_test/accounts-reset").raise_for_status()


def sign_in_at_provider(provider: httpx.Client, authorize_url: str, login: str, password: str) -> str:
    """Follow the provider's redirects from ``authorize_url`` through its login form; the URL it finally
    sends the browser to (the app's callback, with ``code`` and ``state`` or ``error``)."""
    resp = provider.get(authorize_url)
    for _ in range(10):
        if resp.status_code in (302, 303):
            target = resp.url.join(resp.headers["location"])
            if target.netloc != resp.url.netloc:
                return str(target)
            resp = provider.get(target)
            continue
        assert resp.status_code == 200, resp.text
        action = resp.url.join(resp.text.split('action="', 1)[1].split('"', 1)[0])
        resp = provider.post(action, data={"login": login, "password": password})
        if resp.status_code == 200:
            return "form-refused"
    raise AssertionError("the provider never sent the browser back")


def query_of(url: str) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
