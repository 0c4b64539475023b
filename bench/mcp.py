"""MCP tool call benchmark: what calling a tool on an MCP server costs over the same work as a built-in tool.

Processes: agentloft, the test MCP server (``tests/tools/mcp/server_app.py``, the ``mcp`` SDK's own
``MCPServer``) over streamable HTTP, and this client; the stdio variant is the same server started by
agentloft itself (in bubblewrap, as the sandbox user, as in production). Each call goes through the admin's
execute endpoint, which runs exactly what a chat run runs for a tool call (the wrapper: input validation,
time limit, result), without a model in the way.

Baseline, measured in the same run: the built-in ``calculator`` tool adding two numbers. Then the MCP
server's ``add`` tool over HTTP and over stdio. Each is the median of ``--calls`` sequential calls after
a warm-up (the connection, or the process, is then open, as it is for a busy server). Added cost is
``mcp - builtin``: the server row read, the JSON-RPC round trip, the result mapping.

    python -m bench.mcp [--calls 200]

``--long`` measures something else: the CPU time the agentloft process spends on one stdio answer of 1, 4,
7 and 32 MiB (the server's ``long_text`` tool, one JSON-RPC line each), read from ``/proc`` around the call.
Baseline, in the same run: the 1 MiB answer; a reader linear in the line's length spends about the same
CPU per MiB on every size, one that rebuilds its buffer per read spends more per MiB the longer the line.

    python -m bench.mcp --long [--sizes 1,4,7,32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.common import ROOT, serve_app, spawn, stop_all, wait_up

SERVER_SCRIPT = str(Path(ROOT) / "tests" / "tools" / "mcp" / "server_app.py")


def serve_mcp(port: int) -> None:
    import uvicorn
    from tests.tools.mcp.server_app import build

    uvicorn.run(build("bench").streamable_http_app(), host="127.0.0.1", port=port, log_level="warning",
                access_log=False)


async def _post(c: httpx.AsyncClient, url: str, body: Any, status: int = 201) -> Any:
    r = await c.post(url, json=body)
    assert r.status_code == status, f"{url}: {r.status_code} {r.text}"
    return r.json()


async def _setup(c: httpx.AsyncClient, mcp_url: str) -> dict[str, str]:
    """Sign up, allow loopback, add both servers, enable their ``add`` tools; returns tool ids by name."""
    await c.get("/api/health")
    await _post(c, "/api/auth/signup", {"username": "admin", "password": "password123"})
    c.headers["X-CSRF-Token"] = c.cookies.get("agentloft_csrf") or ""
    r = await c.put("/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
    assert r.status_code == 200, r.text
    calc = await _post(c, "/api/agent-tools", {"slug": "calc", "name": "Calculator", "type": "calculator"})
    ids = {"builtin": calc["id"]}
    servers = {"http": {"transport": "http", "url": mcp_url},
               "stdio": {"transport": "stdio", "command": sys.executable, "args": [SERVER_SCRIPT, "bench"]}}
    for name, fields in servers.items():
        server = await _post(c, "/api/admin/mcp-servers", {"slug": f"bench-{name}", "name": name, **fields})
        tools = await _post(c, f"/api/admin/mcp-servers/{server['id']}/refresh", None, status=200)
        ids[name] = next(t["toolId"] for t in tools["items"] if t["name"] == "add")
    return ids


INPUTS = {"builtin": {"expression": "20 + 22"}, "http": {"a": 20, "b": 22}, "stdio": {"a": 20, "b": 22}}


async def _call(c: httpx.AsyncClient, tool_id: str, kind: str) -> float:
    started = time.perf_counter()
    result = await _post(c, f"/api/agent-tools/{tool_id}/execute", {"input": INPUTS[kind]}, status=200)
    elapsed = time.perf_counter() - started
    assert result["success"], result
    return elapsed


async def _measure(base: str, mcp_url: str, calls: int) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=base, timeout=120) as c:
        ids = await _setup(c, mcp_url)
        for kind, tool_id in ids.items():  # warm-up: imports, connections, the stdio process
            for _ in range(5):
                await _call(c, tool_id, kind)
        times: dict[str, list[float]] = {kind: [] for kind in ids}
        for _ in range(calls):  # interleaved, so load on the machine falls on all three alike
            for kind, tool_id in ids.items():
                times[kind].append(await _call(c, tool_id, kind))
    return {kind: statistics.median(values) for kind, values in times.items()}


def _cpu_s(pid: int) -> float:
    """User plus system CPU time of the process so far (its own threads; not its children)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _measure_long(base: str, app_pid: int, sizes: list[int]) -> list[tuple[int, float, float, str]]:
    """(MiB, CPU s, wall s, outcome) of one ``long_text`` call per size over stdio."""
    async with httpx.AsyncClient(base_url=base, timeout=300) as c:
        await c.get("/api/health")
        await _post(c, "/api/auth/signup", {"username": "admin", "password": "password123"})
        c.headers["X-CSRF-Token"] = c.cookies.get("agentloft_csrf") or ""
        server = await _post(c, "/api/admin/mcp-servers", {"slug": "bench-long", "name": "long", "transport": "stdio",
                                                           "command": sys.executable, "args": [SERVER_SCRIPT, "bench"]})
        tools = await _post(c, f"/api/admin/mcp-servers/{server['id']}/refresh", None, status=200)
        tool_id = next(t["toolId"] for t in tools["items"] if t["name"] == "long_text")
        r = await c.put(f"/api/agent-tools/{tool_id}", json={"config": {
            **(await c.get(f"/api/agent-tools/{tool_id}")).json()["config"], "timeoutSeconds": 300}})
        assert r.status_code == 200, r.text
        await c.post(f"/api/agent-tools/{tool_id}/execute", json={"input": {"kib": 1024}})  # warm-up
        out = []
        for mib in sizes:
            runs = max(1, 8 // mib)  # CPU time is counted in clock ticks (10 ms): small answers are repeated
            cpu, started = _cpu_s(app_pid), time.perf_counter()
            for _ in range(runs):
                r = await c.post(f"/api/agent-tools/{tool_id}/execute", json={"input": {"kib": mib * 1024}})
            wall, cpu = (time.perf_counter() - started) / runs, (_cpu_s(app_pid) - cpu) / runs
            result = r.json()
            outcome = "answered" if result.get("success") else f"failed: {result.get('error', r.text)[:110]}"
            out.append((mib, cpu, wall, outcome))
        return out


def _report_long(rows: list[tuple[int, float, float, str]]) -> None:
    base = next((cpu / mib for mib, cpu, _, outcome in rows if mib == 1), None) or 1e-9
    print("One stdio answer of N MiB: the agentloft process's CPU (user + system) and the call's wall time")
    print("  size     CPU s   wall s   CPU per MiB vs 1 MiB   outcome")
    for mib, cpu, wall, outcome in rows:
        print(f"  {mib:3d} MiB {cpu:7.2f} {wall:8.2f}   {cpu / mib / base:10.2f}x            {outcome}")


def _report(result: dict[str, float], calls: int) -> None:
    base = result["builtin"]
    print(f"MCP tool call vs built-in tool: median of {calls} sequential calls through /execute")
    print(f"  built-in calculator (baseline)  {base * 1000:7.2f} ms   1.00x")
    for kind, label in (("http", "MCP over streamable HTTP"), ("stdio", "MCP over stdio (sandboxed)")):
        value = result[kind]
        print(f"  {label:<31} {value * 1000:7.2f} ms   {value / base:.2f}x   adds {(value - base) * 1000:+.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--long", action="store_true", help="CPU of long stdio answers instead")
    parser.add_argument("--sizes", default="1,4,7,32", help="with --long: answer sizes in MiB")
    parser.add_argument("--serve-mcp", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-app", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_mcp:
        serve_mcp(args.serve_mcp)
        return
    if args.serve_app:
        serve_app(args.serve_app, args.data_dir)
        return
    mcp_port, app_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        procs = [spawn("bench.mcp", "--serve-mcp", str(mcp_port)),
                 spawn("bench.mcp", "--serve-app", str(app_port), "--data-dir", data_dir)]
        try:
            base, mcp_url = f"http://127.0.0.1:{app_port}", f"http://127.0.0.1:{mcp_port}/mcp"

            async def run() -> dict[str, float]:
                await wait_up(mcp_url)
                await wait_up(f"{base}/api/health")
                return await _measure(base, mcp_url, args.calls)

            async def run_long() -> list[tuple[int, float, float, str]]:
                await wait_up(f"{base}/api/health")
                return await _measure_long(base, procs[1].pid, [int(n) for n in args.sizes.split(",")])

            if args.long:
                _report_long(asyncio.run(run_long()))
            else:
                _report(asyncio.run(run()), args.calls)
        finally:
            stop_all(procs)


if __name__ == "__main__":
    main()
