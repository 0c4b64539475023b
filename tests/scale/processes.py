"""Real processes for the scale-out tests: ``agentloft serve`` workers on a shared PostgreSQL and Redis,
a private ``redis-server`` that a test may stop and start again (optionally with a password and TLS), and
a reader that follows a reply's stream from a thread."""

from __future__ import annotations

import datetime
import ipaddress
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.chat.helpers import make_agent, parse_sse
from tests.fakes.openai_server import free_port
from tests.support import ApiClient

_SHARED = ("AGENTLOFT_DATABASE_URL", "AGENTLOFT_REDIS_URL", "AGENTLOFT_REDIS_PREFIX", "AGENTLOFT_WORKERS")


def wait_until_up(url: str, proc: subprocess.Popen[bytes], limit_s: float = 120) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{url}: the process exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/api/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not come up")


@dataclass
class Worker:
    """One ``agentloft serve`` (itself N workers with ``--workers N``), started at once, waited for later
    (so several start side by side)."""

    data_dir: Path
    env: dict[str, str]
    workers: int = 1
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Worker:
        env = {k: v for k, v in os.environ.items() if k not in _SHARED}
        env.update(self.env, AGENTLOFT_DATA_DIR=str(self.data_dir), AGENTLOFT_PORT=str(self.port),
                   AGENTLOFT_ENV="test", AGENTLOFT_SECRET_KEY="test-secret-key", AGENTLOFT_CREATE_DEFAULTS="false")
        log = open(self.data_dir.parent / f"serve-{self.port}.log", "wb")  # noqa: SIM115 (kept by the process)
        args = [sys.executable, "-m", "agentloft.cli", "serve", "--workers", str(self.workers),
                "--log-level", "warning"]
        self.proc = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
        return self

    def wait(self) -> Worker:
        assert self.proc is not None
        wait_until_up(self.url, self.proc)
        return self

    def kill(self) -> None:
        """SIGKILL: no shutdown, no saving, its leases simply stop being renewed."""
        assert self.proc is not None
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)

    def log(self) -> str:
        path = self.data_dir.parent / f"serve-{self.port}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def first_admin(url: str, model_base_url: str) -> ApiClient:
    """The first account of a fresh instance at ``url`` (an admin), signed in, with the default model on the
    fake model server at ``model_base_url`` and an agent ``helper`` using it."""
    admin = ApiClient(url)
    admin.get("/api/health")
    admin.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
    model = admin.ok("POST", "/api/admin/models", json={
        "name": "Fake", "provider": "openai", "baseUrl": model_base_url, "model": "fake", "isDefault": True})
    make_agent(admin, "helper", modelId=model["id"])
    return admin


def _self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (its own CA), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "redis.crt", directory / "redis.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@dataclass
class PrivateRedis:
    """A ``redis-server`` of the test's own, with a password and TLS, that can go away and come back."""

    directory: Path
    password: str = "s3cret"
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def __post_init__(self) -> None:
        self.cert, self.key = _self_signed(self.directory)

    @staticmethod
    def available() -> bool:
        return shutil.which("redis-server") is not None

    @property
    def url(self) -> str:
        return f"rediss://:{self.password}@127.0.0.1:{self.port}/0?ssl_ca_certs={self.cert}"

    def start(self) -> PrivateRedis:
        args = ["redis-server", "--port", "0", "--tls-port", str(self.port), "--tls-cert-file", str(self.cert),
                "--tls-key-file", str(self.key), "--tls-ca-cert-file", str(self.cert), "--tls-auth-clients", "no",
                "--requirepass", self.password, "--save", "", "--appendonly", "no", "--bind", "127.0.0.1",
                "--dir", str(self.directory)]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)


class Reader(threading.Thread):
    """Reads one SSE response to its end in the background; ``text_seen`` is set once ``enough`` text
    deltas came (or the response ended)."""

    def __init__(self, client: ApiClient, method: str, url: str, body: dict[str, Any] | None = None,
                 enough: int = 20) -> None:
        super().__init__(daemon=True)
        self.client, self.method, self.url, self.body, self.enough = client, method, url, body, enough
        self.text_seen = threading.Event()
        self.session_id: str | None = None
        self.lines: list[str] = []
        self.ended_at = 0.0
        self.broken = False

    def run(self) -> None:
        try:
            with self.client.stream(self.method, self.url, json=self.body) as resp:
                self.session_id = resp.headers.get("x-session-id")
                deltas = 0
                for line in resp.iter_lines():
                    self.lines.append(line)
                    deltas += '"text-delta"' in line
                    if deltas >= self.enough:
                        self.text_seen.set()
        except httpx.TransportError:  # the worker serving it was killed
            self.broken = True
        self.ended_at = time.monotonic()
        self.text_seen.set()

    @property
    def chunks(self) -> list[Any]:
        return parse_sse("\n\n".join(line for line in self.lines if line))
