"""A stdio server that may use the network reaches only what the network guard allows: its namespace has
nothing but loopback and the proxy, and the proxy checks every target as the network tools do."""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloft.core import netguard
from agentloft.core.settings import Settings
from agentloft.tools.mcp.egress import Egress
from agentloft.tools.mcp.launch import BwrapLauncher, StdioSpec, mcp_limits
from tests.support import ApiClient
from tests.tools.mcp.conftest import tools_by_name
from tests.tools.mcp.test_calls import execute
from tests.tools.types.local_server import LocalWeb

FETCH_SERVER = str(Path(__file__).with_name("fetch_server.py"))

# Tries each way out: a socket of its own, a plain request through the proxy, a CONNECT tunnel.
PROBE = """import http.client, json, os, socket, sys, urllib.error, urllib.parse, urllib.request
proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
def plain(url):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return f"{r.status} {r.read().decode()[:20]}"
    except urllib.error.HTTPError as e:
        return f"{e.code} {e.read().decode()[:80]}"
def tunnel(host, port):
    conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
    conn.set_tunnel(host, port)
    try:
        conn.request("GET", "/page")
        return str(conn.getresponse().status)
    except OSError as e:
        return str(e)
def direct(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5)
        return "connected"
    except OSError as e:
        return type(e).__name__
port = int(sys.argv[1])
print(json.dumps({
    "direct": direct(port),
    "plain": plain(f"http://127.0.0.1:{port}/page"),
    "tunnel": tunnel("127.0.0.1", port),
    "metadata": plain("http://169.254.169.254/latest/meta-data/"),
    "private": tunnel("10.255.255.1", 80),
}))
"""


@pytest.fixture
def script() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="agentloft-egress-"))
    root.chmod(0o755)
    (root / "probe.py").write_text(PROBE)
    (root / "probe.py").chmod(0o644)
    yield root / "probe.py"
    shutil.rmtree(root)


@pytest.fixture
async def allowed() -> AsyncIterator[tuple[list[str], BwrapLauncher]]:
    """The allow-list (change it between calls) and a launcher whose networked servers obey it."""
    entries: list[str] = []

    async def allow_list() -> netguard.AllowList:
        return netguard.AllowList.parse(entries)

    settings = Settings()
    launcher = BwrapLauncher(private=(), user=settings.mcp_sandbox_user, limits=mcp_limits(settings),
                             egress=Egress(allow_list))
    yield entries, launcher
    await launcher.aclose()


async def probe(launcher: BwrapLauncher, script: Path, port: int) -> dict[str, str]:
    params = launcher(StdioSpec(command="/usr/bin/python3", args=(str(script), str(port)), network=True))
    assert params.command.endswith("nsenter") and "--unshare-net" not in params.args
    proc = await asyncio.create_subprocess_exec(params.command, *params.args, stdout=asyncio.subprocess.PIPE,
                                                stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    return json.loads(out)


async def test_only_what_the_guard_allows_is_reached(allowed: tuple[list[str], BwrapLauncher], script: Path,
                                                     web: LocalWeb) -> None:
    entries, launcher = allowed
    blocked = await probe(launcher, script, web.port)
    assert blocked["direct"] == "ConnectionRefusedError"  # its own loopback: the host's is not there
    assert blocked["plain"].startswith("403 blocked: 127.0.0.1 is a loopback address")
    assert blocked["tunnel"] == "Tunnel connection failed: 403 Forbidden"
    assert blocked["metadata"].startswith("403 blocked: 169.254.169.254 is a link-local address")
    assert blocked["private"] == "Tunnel connection failed: 403 Forbidden"
    assert web.requests == []

    entries.append("127.0.0.1")  # the admin allows the host's loopback; the next connection sees it
    opened = await probe(launcher, script, web.port)
    assert opened["direct"] == "ConnectionRefusedError"  # still only through the proxy
    assert opened["plain"].startswith("200 <!doctype html>")
    assert opened["tunnel"] == "200"
    assert opened["metadata"].startswith("403 blocked") and opened["private"].endswith("403 Forbidden")
    assert [r["path"] for r in web.requests] == ["/page", "/page"]


def test_the_admins_internal_hosts_setting_opens_the_way(admin: ApiClient, add_server: Callable[..., Any],
                                                          web: LocalWeb) -> None:
    """Through the app: the allow-list is the one Admin → Settings edits, read at each connection."""
    server = add_server("fetcher", transport="stdio", command=sys.executable, args=[FETCH_SERVER], network=True)
    fetch = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))["fetch"]
    page = f"{web.url}/page"
    refused = execute(admin, fetch, {"url": page})["data"]["result"]
    assert refused.startswith("403 blocked: 127.0.0.1 is a loopback address"), refused
    assert web.requests == []
    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
    assert execute(admin, fetch, {"url": page})["data"]["result"] == "200 <!doctype html>"
    assert web.paths() == ["/page"]
