"""What one abusive A2A exchange costs everyone else: another user's ``GET /api/auth/me`` while it runs.

Two loads, each against the app in its own process (with the fake model and, for the second, a remote
agent in processes of their own):

1. **400,000 parts.** One A2A ``SendMessage`` of ``--parts`` one-letter text parts (a 6 MB body), sent with a
   personal token to a local agent. a2a-sdk parses the body with protobuf's JSON parser, in Python, on
   the event loop; the app now reads at most 2 MiB of it first and refuses it (``a2a.limits``).
2. **One 200 MB event.** A chat whose agent hands a question to a remote agent (agent-invoke) that streams
   one artifact event of ``--event-mb`` MB of text, in 64 KB writes, then completes. a2a-sdk's client reads
   the event whole, parses it and hands it on; the app now stops reading at 1 MiB of one event
   (``core.netguard``, ``a2a.remote``).

For each, ``/me`` of another signed-in user, one request after another, alone (the baseline, measured in
the same run) and while the load runs; the load's own wall time and outcome; the app's peak resident
memory (``VmHWM``) before and after the load. ``--app-src DIR`` serves the app from another source tree
(a copy of the code before this work), which is how the "before" rows are measured: the parts of this
script that drive the app use HTTP only.

    python -m bench.a2a_bounds [--parts 400000] [--event-mb 200] [--baseline 200] [--app-src DIR]
                               [--only parts|event]

``--parts 150000`` (a 1.95 MB body, under the 2 MiB cap) measures the worst the check itself costs: the
body read and parsed, then refused for its part count.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.a2a import LEAF_PROMPT, serve_fake
from bench.common import ROOT, serve_app, stop_all, wait_up
from bench.latency import Latency, probe_times

PEER_TOKEN = "bench-peer-token"


def serve_peer(port: int, event_mb: int) -> None:
    """A remote A2A agent (JSON-RPC, streaming) whose every answer is one artifact event of ``event_mb`` MB
    of text, then its completion. Written by hand: the SDK would build the whole event in memory first."""
    import uvicorn
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    url = f"http://127.0.0.1:{port}/"
    card = {"name": "Big", "description": "Answers at length.", "version": "1.0",
            "supportedInterfaces": [{"protocolBinding": "JSONRPC", "protocolVersion": "1.0", "url": url}],
            "capabilities": {"streaming": True}, "defaultInputModes": ["text/plain"],
            "defaultOutputModes": ["text/plain"], "skills": [{"id": "big", "name": "Big", "description": "x"}]}

    def event(request_id: Any, result: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}).encode() + b"\n\n"

    async def answer(request_id: Any, request: Request) -> AsyncIterator[bytes]:
        ids = {"taskId": "big-task", "contextId": "big"}
        yield event(request_id, {"task": {"id": "big-task", "contextId": "big",
                                          "status": {"state": "TASK_STATE_WORKING"}}})
        yield (b'data: {"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode()
               + b', "result": {"artifactUpdate": {"taskId": "big-task", "contextId": "big", '
               b'"artifact": {"artifactId": "a", "parts": [{"text": "')
        chunk = b"w" * 65536
        for _ in range(event_mb * 1024 * 1024 // len(chunk)):
            if await request.is_disconnected():  # uvicorn drops writes after a disconnect silently
                return
            yield chunk
        yield b'"}]}}}}\n\n'
        yield event(request_id, {"statusUpdate": {**ids, "status": {"state": "TASK_STATE_COMPLETED"}}})

    async def rpc(request: Request) -> Response:
        body = await request.json()
        if body.get("method") == "SendStreamingMessage":
            return StreamingResponse(answer(body.get("id"), request), media_type="text/event-stream")
        return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": {}})

    async def agent_card(request: Request) -> Response:
        return JSONResponse(card)

    app = Starlette(routes=[Route("/.well-known/agent-card.json", agent_card), Route("/", rpc, methods=["POST"])])
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


def _spawn(app_src: str | None, *args: str) -> subprocess.Popen[bytes]:
    """``python -m bench.a2a_bounds <args>``, with ``app_src`` (a tree holding ``agentloft``) first on the
    path when given, so that the app served is that tree's."""
    path = [app_src] if app_src else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)])}
    return subprocess.Popen([sys.executable, "-m", "bench.a2a_bounds", *args], cwd=ROOT, env=env)


def _peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


async def _post(c: httpx.AsyncClient, url: str, body: Any, status: int = 201) -> Any:
    r = await c.post(url, json=body)
    assert r.status_code == status, f"{url}: {r.status_code} {r.text[:500]}"
    return r.json()


async def setup_agents(base: str, fake_url: str, peer_url: str) -> tuple[httpx.Cookies, str, str, httpx.Cookies]:
    """The admin (fake model, agents, a token), and another user for ``/me``. Returns the admin's cookies
    and CSRF token, the admin's A2A token, and the other user's cookies."""
    async with httpx.AsyncClient(base_url=base, timeout=60) as c:
        await c.get("/api/health")
        await _post(c, "/api/auth/signup", {"username": "admin", "password": "password123"})
        c.headers["X-CSRF-Token"] = c.cookies.get("agentloft_csrf") or ""
        await _post(c, "/api/admin/models", {"name": "Fake", "provider": "openai", "baseUrl": fake_url,
                                             "model": "fake-model", "isDefault": True})
        r = await c.put("/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
        assert r.status_code == 200, r.text
        await _post(c, "/api/admin/agents", {"slug": "leaf", "name": "leaf", "systemPrompt": LEAF_PROMPT,
                                             "a2aCallable": True})
        remote = await _post(c, "/api/admin/agents", {
            "slug": "big", "name": "big", "kind": "remote", "cardUrl": f"{peer_url}/.well-known/agent-card.json",
            "remoteToken": PEER_TOKEN, "a2aCallable": True})
        assert remote["cardError"] is None, remote["cardError"]
        tool = await _post(c, "/api/agent-tools", {"slug": "invoke", "name": "Invoke", "type": "agent-invoke",
                                                   "config": {"timeoutMs": 600_000}})
        hop = await _post(c, "/api/admin/agents", {"slug": "hop", "name": "hop", "systemPrompt": "HOP next=big"})
        r = await c.put(f"/api/admin/agents/{hop['id']}/tools", json=[{"toolId": tool["id"]}])
        assert r.status_code == 200, r.text
        await _post(c, "/api/admin/users", {"username": "other", "password": "password123"})
        token = str((await _post(c, "/api/auth/tokens", {"name": "bench"}))["token"])
        admin, csrf = c.cookies, c.headers["X-CSRF-Token"]
    async with httpx.AsyncClient(base_url=base, timeout=60) as other:
        await other.get("/api/health")
        r = await other.post("/api/auth/login", json={"username": "other", "password": "password123"},
                             headers={"X-CSRF-Token": other.cookies.get("agentloft_csrf") or ""})
        assert r.status_code == 200, r.text
        return admin, csrf, token, other.cookies


def parts_body(parts: int) -> bytes:
    params = {"message": {"role": "ROLE_USER", "messageId": "m1", "parts": [{"text": "a"}] * parts}}
    return json.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params}).encode()


async def parts_load(base: str, token: str, body: bytes) -> str:
    """One SendMessage of one-letter parts (``body``, built beforehand); what came back."""
    headers = {"Authorization": f"Bearer {token}", "A2A-Version": "1.0", "Content-Type": "application/json"}
    async with httpx.AsyncClient(timeout=600) as c:
        r = await c.post(f"{base}/a2a/leaf/", content=body, headers=headers)
    data = r.json()
    if "error" in data:
        return f"HTTP {r.status_code}, error {data['error']['code']}: {data['error']['message'][:60]}"
    return f"HTTP {r.status_code}, task {data['result']['task']['status']['state']}"


async def event_load(base: str, admin: httpx.Cookies, csrf: str) -> str:
    """A chat whose agent calls the remote agent; the tool's outcome and the size of the chat's stream.
    The stream is scanned as bytes, so that reading a tool result of hundreds of MB costs this process
    little."""
    size, outcome, tail = 0, "no tool result", b""
    async with httpx.AsyncClient(base_url=base, cookies=admin, timeout=600) as c, c.stream(
            "POST", "/api/agents/hop/chat", json={"message": "go"}, headers={"X-CSRF-Token": csrf}) as r:
        assert r.status_code == 200
        async for chunk in r.aiter_raw():
            size += len(chunk)
            seen = tail + chunk
            for marker, said in ((b'"tool-output-error"', "failed"), (b'"tool-output-available"', "completed")):
                at = seen.find(marker)
                if at >= 0:
                    error = seen.find(b'"errorText":"', at)
                    detail = seen[error + 13:error + 100] if error >= 0 else b""
                    outcome = f"{said}: {detail.decode(errors='replace')}"
            tail = chunk[-32:]
    return f"{outcome[:120]}; chat stream {size / 1e6:.1f} MB"


def in_thread(load: Callable[[], Coroutine[Any, Any, str]]) -> Awaitable[str]:
    """Run ``load`` on a loop of its own, in a thread: its work must not delay the probe's requests."""
    return asyncio.to_thread(lambda: asyncio.run(load()))


async def _measure(base: str, pid: int, fake_url: str, peer_url: str, args: argparse.Namespace) -> None:
    await wait_up(f"{base}/api/health")
    admin, csrf, token, other = await setup_agents(base, fake_url, peer_url)
    async with httpx.AsyncClient(base_url=base, cookies=other, timeout=600) as me_client:
        async def me() -> None:
            (await me_client.get("/api/auth/me")).raise_for_status()

        quiet = await probe_times(me, until=lambda: True, least=args.baseline)
        print(quiet.line("/me alone"))
        body = parts_body(args.parts)
        loads = {"parts": (f"{args.parts:,}-part SendMessage", lambda: parts_load(base, token, body)),
                 "event": (f"{args.event_mb} MB remote event", lambda: event_load(base, admin, csrf))}
        for key, (name, load) in loads.items():
            if args.only and args.only != key:
                continue
            rss_before = _peak_rss_mb(pid)
            started = time.perf_counter()
            task = asyncio.ensure_future(in_thread(load))
            loud: Latency = await probe_times(me, until=task.done, least=5)
            outcome = await task
            print(loud.line(f"/me during the {name}", quiet))
            print(f"    the load: {time.perf_counter() - started:.1f} s, {outcome}; app peak RSS "
                  f"{rss_before:.0f} -> {_peak_rss_mb(pid):.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--parts", type=int, default=400_000, help="one-letter parts of the SendMessage")
    parser.add_argument("--event-mb", type=int, default=200)
    parser.add_argument("--baseline", type=int, default=200, help="quiet /me requests for the baseline")
    parser.add_argument("--app-src", help="serve agentloft from this tree (e.g. a copy of the code before)")
    parser.add_argument("--only", choices=["parts", "event"])
    parser.add_argument("--serve-app", nargs=2, metavar=("PORT", "DATA_DIR"), help=argparse.SUPPRESS)
    parser.add_argument("--serve-fake", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-peer", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_app:
        serve_app(int(args.serve_app[0]), args.serve_app[1])
        return
    if args.serve_fake:
        serve_fake(args.serve_fake, chunks=10, delay=0)
        return
    if args.serve_peer:
        serve_peer(args.serve_peer, args.event_mb)
        return
    app_port, fake_port, peer_port = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        procs = [_spawn(args.app_src, "--serve-app", str(app_port), data_dir),
                 _spawn(None, "--serve-fake", str(fake_port)),
                 _spawn(None, "--serve-peer", str(peer_port), "--event-mb", str(args.event_mb))]
        try:
            fake_url, peer_url = f"http://127.0.0.1:{fake_port}/v1", f"http://127.0.0.1:{peer_port}"

            async def run() -> None:
                await wait_up(f"{fake_url}/models")
                await wait_up(f"{peer_url}/.well-known/agent-card.json")
                await _measure(f"http://127.0.0.1:{app_port}", procs[0].pid, fake_url, peer_url, args)

            print(f"A2A bounds: app from {args.app_src or 'this tree'}")
            asyncio.run(run())
        finally:
            stop_all(procs)


if __name__ == "__main__":
    main()
