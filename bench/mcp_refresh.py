"""MCP refresh benchmark: what refreshing a server that lists thousands of tools does to everyone else.

Processes: an MCP server listing ``--tools`` tools (the ``mcp`` SDK's low-level ``Server`` over streamable
HTTP, each tool with a description and a one-field schema), agentloft, and this client. While an admin
refreshes the server, another signed-in user asks ``GET /api/auth/me`` one request after another, as
every page does (``bench.latency``); its latency is what the refresh costs the others. Baseline, measured
in the same run: the same requests for 3 s while nothing else happens.

Three refreshes: the first (every tool new: one row each), a second (nothing changed: every row compared,
none written), and one after the server's descriptions changed (every row rewritten). With a tool limit
below ``--tools`` (``AGENTLOFT_MCP_MAX_TOOLS``, passed through ``--max-tools``) each refresh is refused.

    python -m bench.mcp_refresh [--tools 20000] [--max-tools 20000]
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.common import serve_app, spawn, stop_all, wait_up
from bench.latency import Latency, probe_times

QUIET_S = 3.0  # the baseline's length


def serve_many(port: int, count: int) -> None:
    """An MCP server listing ``count`` tools; ``POST /bump`` changes every description (a new version)."""
    import mcp_types as types
    import uvicorn
    from mcp.server.lowlevel import Server
    from starlette.responses import PlainTextResponse

    version = {"n": 1}

    def tools() -> list[types.Tool]:
        schema = {"type": "object", "properties": {"q": {"type": "string", "description": "What to look up."}},
                  "required": ["q"]}
        return [types.Tool(name=f"tool_{i}", title=f"Tool {i}", input_schema=schema,
                           description=f"Tool number {i}, version {version['n']}: looks a thing up.")
                for i in range(count)]

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools())

    async def on_call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    app = Server("many", on_list_tools=on_list, on_call_tool=on_call).streamable_http_app()

    async def outer(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"] == "/bump":
            version["n"] += 1
            await PlainTextResponse("bumped")(scope, receive, send)
            return
        await app(scope, receive, send)

    uvicorn.run(outer, host="127.0.0.1", port=port, log_level="warning", access_log=False)


async def _ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, f"{r.request.url}: {r.status_code} {r.text[:300]}"
    return r.json() if r.content else None


async def _setup(admin: httpx.AsyncClient, other: httpx.AsyncClient, mcp_url: str) -> str:
    await admin.get("/api/health")
    await _ok(await admin.post("/api/auth/signup", json={"username": "admin", "password": "password123"}), 201)
    admin.headers["X-CSRF-Token"] = admin.cookies.get("agentloft_csrf") or ""
    await _ok(await admin.put("/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]}))
    await _ok(await admin.post("/api/admin/users", json={"username": "other", "password": "password123"}), 201)
    await other.get("/api/health")
    other.headers["X-CSRF-Token"] = other.cookies.get("agentloft_csrf") or ""
    await _ok(await other.post("/api/auth/login", json={"username": "other", "password": "password123"}))
    server = await _ok(await admin.post("/api/admin/mcp-servers", json={
        "slug": "many", "name": "Many", "transport": "http", "url": mcp_url}), 201)
    return str(server["id"])


Row = tuple[str, Latency, str, float]  # what ran, the probe's latencies meanwhile, its outcome, its seconds


async def _during(
    me: Callable[[], Awaitable[object]], work: Callable[[], Awaitable[str]]
) -> tuple[Latency, str, float]:
    """``me``'s latencies (``bench.latency``) while ``work`` runs once."""
    started = time.perf_counter()
    task = asyncio.create_task(work())
    await asyncio.sleep(0)  # let the work start before the first probe
    latency = await probe_times(me, until=task.done, least=5)
    return latency, await task, time.perf_counter() - started


async def _measure(base: str, mcp_url: str, mcp_base: str) -> tuple[Latency, list[Row]]:
    timeout = httpx.Timeout(600)
    async with httpx.AsyncClient(base_url=base, timeout=timeout) as admin, \
            httpx.AsyncClient(base_url=base, timeout=timeout) as other, httpx.AsyncClient(timeout=timeout) as mcp:
        server_id = await _setup(admin, other, mcp_url)

        async def me() -> None:
            r = await other.get("/api/auth/me")
            assert r.status_code == 200, r.text

        async def refresh() -> str:
            r = await admin.post(f"/api/admin/mcp-servers/{server_id}/refresh")
            if r.status_code != 200:
                return f"HTTP {r.status_code}: {r.json()['error']['message'][:100]}"
            return f"{len(r.json()['items'])} tools"

        quiet_until = time.monotonic() + QUIET_S
        quiet = await probe_times(me, until=lambda: time.monotonic() > quiet_until, least=100)
        rows: list[Row] = []
        for label in ("first refresh (all new)", "refresh, nothing changed"):
            rows.append((label, *await _during(me, refresh)))
        await mcp.post(f"{mcp_base}/bump")
        rows.append(("refresh, every description changed", *await _during(me, refresh)))
        return quiet, rows


def _report(quiet: Latency, rows: list[Row], tools: int) -> None:
    print(f"Another user's GET /api/auth/me while an admin refreshes an MCP server listing {tools:,} tools")
    print(quiet.line("nothing else"))
    for label, latency, outcome, took in rows:
        print(latency.line(label, quiet))
        print(f"  {'':34} the refresh took {took:.2f} s: {outcome}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--tools", type=int, default=20_000)
    parser.add_argument("--max-tools", type=int, help="AGENTLOFT_MCP_MAX_TOOLS for the app (default: its own)")
    parser.add_argument("--serve-many", type=int, nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--serve-app", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_many:
        serve_many(*args.serve_many)
        return
    if args.serve_app:
        serve_app(args.serve_app, args.data_dir)
        return
    mcp_port, app_port = free_port(), free_port()
    env = {"AGENTLOFT_MCP_MAX_TOOLS": str(args.max_tools)} if args.max_tools else {}
    with tempfile.TemporaryDirectory() as data_dir:
        procs = [spawn("bench.mcp_refresh", "--serve-many", str(mcp_port), str(args.tools)),
                 spawn("bench.mcp_refresh", "--serve-app", str(app_port), "--data-dir", data_dir, env=env)]
        try:
            base, mcp_base = f"http://127.0.0.1:{app_port}", f"http://127.0.0.1:{mcp_port}"

            async def run() -> tuple[Latency, list[Row]]:
                await wait_up(f"{mcp_base}/mcp")
                await wait_up(f"{base}/api/health")
                return await _measure(base, f"{mcp_base}/mcp", mcp_base)

            _report(*asyncio.run(run()), args.tools)
        finally:
            stop_all(procs)


if __name__ == "__main__":
    main()
