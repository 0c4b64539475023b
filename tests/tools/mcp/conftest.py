"""Fixtures for the MCP tests: the test MCP server (``server_app``) served over streamable HTTP on a free
loopback port (optionally behind a bearer token), the same server as a stdio command, and the admin
setting that lets tools reach 127.0.0.1."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import ThreadedServer
from tests.support import ApiClient
from tests.tools.mcp.server_app import BearerGuard, build
from tests.tools.types.local_server import web, web_server  # noqa: F401 (fixtures of this folder)

SERVER_SCRIPT = str(Path(__file__).with_name("server_app.py"))
TOKEN = "mcp-test-token"


@dataclass
class HttpPeer:
    server: ThreadedServer
    guard: BearerGuard

    @property
    def url(self) -> str:
        return f"{self.server.url}/mcp"


def start_http_peer() -> HttpPeer:
    """A fresh MCP server over streamable HTTP that wants ``Authorization: Bearer mcp-test-token``."""
    guard = BearerGuard(build().streamable_http_app(), TOKEN)
    return HttpPeer(ThreadedServer(guard).start(), guard)


@pytest.fixture
def mcp_http() -> Iterator[HttpPeer]:
    peer = start_http_peer()
    yield peer
    peer.server.stop()


def stdio_command() -> dict[str, Any]:
    """The test server as an admin would configure it: this Python, the script, an environment."""
    return {"command": sys.executable, "args": [SERVER_SCRIPT], "env": {"GREETING": "hello"}}


@pytest.fixture
def allow_local(admin: ApiClient) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})


@pytest.fixture
def add_server(admin: ApiClient) -> Callable[..., dict[str, Any]]:
    def add(slug: str = "testing", **fields: Any) -> dict[str, Any]:
        body = {"slug": slug, "name": fields.pop("name", slug.title()), **fields}
        return admin.ok("POST", "/api/admin/mcp-servers", json=body)

    return add


def tools_by_name(page: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["name"]: t for t in page["items"]}


@pytest.fixture
def make_agent(admin: ApiClient, model_id: int) -> Callable[..., dict[str, Any]]:
    def make(slug: str, prompt: str = "You use tools.", **fields: Any) -> dict[str, Any]:
        body = {"slug": slug, "name": fields.pop("name", slug.title()), "systemPrompt": prompt, **fields}
        return admin.ok("POST", "/api/admin/agents", json=body)

    return make
