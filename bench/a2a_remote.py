"""Remote agent hop benchmark: what calling an agent on another agentloft over A2A costs over a local hop.

Four processes: the fake OpenAI-compatible model, agentloft A (the caller's), agentloft B (the remote
agent's) and this client. Both serve a ``leaf`` agent that streams an N-chunk reply. On A, ``hop1`` hands
the question to A's own ``leaf`` with agent-invoke (a local hop), and ``hop1r`` to ``far-leaf``: B's
``leaf`` registered on A as a remote agent, reached through a2a-sdk's streaming client, B's A2A server and
B's engine, with the reply written into A's side-panel buffer as it arrives (a remote hop).

Baseline, measured in the same run: a chat with A's ``leaf`` (depth 0). Each turn is read as the chat page
reads it (the reply's stream plus the side panel's); each figure is the median of ``--runs`` runs, the
three kinds interleaved. Reported: each hop's cost over depth 0, and the remote hop's cost over the local
one, also as a share of the model's own reply time; and the CPU time both agentloft processes spent on a
turn of each kind (read from ``/proc``), a figure that other work on a shared machine hardly moves.

    python -m bench.a2a_remote [--runs 5] [--chunks 500] [--delay 0.005]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path

import httpx
from tests.fakes.openai_server import free_port

from bench.a2a import LEAF_PROMPT, _chat, _model_direct, _post, serve_fake
from bench.common import serve_app, spawn, stop_all, wait_up


async def _sign_up(c: httpx.AsyncClient, fake_url: str) -> None:
    await c.get("/api/health")
    await _post(c, "/api/auth/signup", {"username": "admin", "password": "password123"})
    c.headers["X-CSRF-Token"] = c.cookies.get("agentloft_csrf") or ""
    await _post(c, "/api/admin/models", {"name": "Fake", "provider": "openai", "baseUrl": fake_url,
                                         "model": "fake-model", "isDefault": True})


async def _agent(c: httpx.AsyncClient, slug: str, **fields: object) -> dict[str, object]:
    return await _post(c, "/api/admin/agents", {"slug": slug, "name": slug, "a2aCallable": True,
                                                "maxOutputTokens": 100_000, **fields})


async def _setup_remote(c: httpx.AsyncClient, fake_url: str) -> str:
    """B: the leaf agent and a token for A."""
    await _sign_up(c, fake_url)
    await _agent(c, "leaf", systemPrompt=LEAF_PROMPT)
    return str((await _post(c, "/api/auth/tokens", {"name": "agentloft A"}))["token"])


async def _setup_caller(c: httpx.AsyncClient, fake_url: str, remote_base: str, token: str) -> None:
    """A: its own leaf, B's leaf as a remote agent, and a hop agent in front of each."""
    await _sign_up(c, fake_url)
    r = await c.put("/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
    assert r.status_code == 200, r.text
    tool = await _post(c, "/api/agent-tools", {"slug": "invoke", "name": "Invoke", "type": "agent-invoke",
                                               "config": {"maxOutputTokens": 100_000}})
    await _agent(c, "leaf", systemPrompt=LEAF_PROMPT)
    remote = await _agent(c, "far-leaf", kind="remote", remoteToken=token,
                          cardUrl=f"{remote_base}/a2a/leaf/.well-known/agent-card.json")
    assert remote["cardError"] is None, remote["cardError"]
    for slug, target in (("hop1", "leaf"), ("hop1r", "far-leaf")):
        agent = await _agent(c, slug, systemPrompt=f"HOP next={target}")
        r = await c.put(f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": tool["id"]}])
        assert r.status_code == 200, r.text


def _cpu_s(pids: Sequence[int]) -> float:
    """CPU time (user + system) the processes have used so far."""
    ticks = 0
    for pid in pids:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime and stime, fields 14 and 15 of the line
    return ticks / os.sysconf("SC_CLK_TCK")


async def _measure(
    base_a: str, base_b: str, fake_url: str, runs: int, chunks: int, pids: Sequence[int]
) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=base_b, timeout=300) as b:
        token = await _setup_remote(b, fake_url)
    async with httpx.AsyncClient(base_url=base_a, timeout=300) as c:
        await _setup_caller(c, fake_url, base_b, token)
        for slug in ("hop1", "hop1r"):  # warm-up: imports, connection pools, first queries
            await _chat(c, slug, chunks)
        times: dict[str, list[float]] = {"model": [], "leaf": [], "hop1": [], "hop1r": []}
        cpu: dict[str, list[float]] = {"leaf": [], "hop1": [], "hop1r": []}
        for _ in range(runs):
            times["model"].append(await _model_direct(fake_url, chunks))
            for slug in ("leaf", "hop1", "hop1r"):
                before = _cpu_s(pids)
                times[slug].append(await _chat(c, slug, chunks))
                cpu[slug].append(_cpu_s(pids) - before)
    medians = {slug: statistics.median(values) for slug, values in times.items()}
    return medians | {f"cpu_{slug}": statistics.median(values) for slug, values in cpu.items()}


def _report(result: dict[str, float], args: argparse.Namespace) -> None:
    model, direct, local, remote = result["model"], result["leaf"], result["hop1"], result["hop1r"]
    print(f"remote vs local agent-invoke hop: {args.chunks}-chunk reply, {args.delay * 1000:g} ms between model "
          f"chunks, median of {args.runs} runs")
    print(f"  callee's model, read directly  {model * 1000:8.1f} ms")
    print(f"  chat with leaf (depth 0)       {direct * 1000:8.1f} ms   1.00x")
    print(f"  local hop (hop1 -> leaf)       {local * 1000:8.1f} ms   {local / direct:.2f}x   "
          f"hop {(local - direct) * 1000:+.1f} ms")
    print(f"  remote hop (hop1r -> B's leaf) {remote * 1000:8.1f} ms   {remote / direct:.2f}x   "
          f"hop {(remote - direct) * 1000:+.1f} ms")
    extra = remote - local
    print(f"  remote over local              {extra * 1000:+8.1f} ms   = {extra / model:+.1%} of the model's reply")
    leaf, local_cpu, remote_cpu = result["cpu_leaf"], result["cpu_hop1"], result["cpu_hop1r"]
    print(f"  CPU of A and B per turn: depth 0 {leaf * 1000:.0f} ms, local hop {local_cpu * 1000:.0f} ms, "
          f"remote hop {remote_cpu * 1000:.0f} ms ({(remote_cpu - local_cpu) * 1000:+.0f} ms over local)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--delay", type=float, default=0.005)
    parser.add_argument("--serve-fake", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--serve-app", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--data-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_fake:
        serve_fake(args.serve_fake, args.chunks, args.delay)
        return
    if args.serve_app:
        serve_app(args.serve_app, args.data_dir)
        return
    fake_port, port_a, port_b = free_port(), free_port(), free_port()
    with tempfile.TemporaryDirectory() as dir_a, tempfile.TemporaryDirectory() as dir_b:
        fake_args = ("--serve-fake", str(fake_port), "--chunks", str(args.chunks), "--delay", str(args.delay))
        procs = [spawn("bench.a2a_remote", *fake_args),
                 spawn("bench.a2a_remote", "--serve-app", str(port_a), "--data-dir", dir_a),
                 spawn("bench.a2a_remote", "--serve-app", str(port_b), "--data-dir", dir_b)]
        try:
            base_a, base_b = f"http://127.0.0.1:{port_a}", f"http://127.0.0.1:{port_b}"
            fake_url = f"http://127.0.0.1:{fake_port}/v1"

            async def run() -> dict[str, float]:
                await wait_up(f"{fake_url}/models")
                await wait_up(f"{base_a}/api/health")
                await wait_up(f"{base_b}/api/health")
                return await _measure(base_a, base_b, fake_url, args.runs, args.chunks,
                                      [procs[1].pid, procs[2].pid])

            _report(asyncio.run(run()), args)
        finally:
            stop_all(procs)


if __name__ == "__main__":
    main()
