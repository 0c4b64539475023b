"""Agent-invoke hop benchmark: what handing a sub-task to another agent costs over asking it directly.

Three processes: the fake OpenAI-compatible model, agentloft, and this client. Agents:
``leaf`` answers with a reply of N chunks (500 by default); ``hop1`` hands the question to ``leaf`` with
the agent-invoke tool, ``hop2`` to ``hop1``, ``hop3`` to ``hop2``. A hop agent's own model steps are tiny
(one tool call, then a two-word answer), so what a hop adds is our work: the task row, the callee
session, both stored messages, the callee's stream buffer, and the caller's two extra model round trips.

Baseline, measured in the same run: the callee's model stream read directly with httpx. Then, read as the
chat page reads them (the reply's stream, plus the side panel's stream for each ``data-a2a-task-started``):
a chat with the callee itself (depth 0), and the same question through depth 1 (hop1) and depth 3
(hop3). Each is the median of ``--runs`` runs. Per-hop overhead is ``(depth_N - depth_0) / N`` and its
ratio is to the model's own reply time. Goal: under 10% per hop.

The model streams its chunks with ``--delay`` seconds between them (0.005 is a fast real model, ~200
chunks/s); ``--delay 0`` is the worst case, where our per-request work is compared with no model time.

    python -m bench.a2a [--runs 5] [--chunks 500] [--delay 0.005]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.common import serve_app, spawn, stop_all, wait_up

LEAF_PROMPT = "LEAF"



def serve_fake(port: int, chunks: int, delay: float) -> None:
    """Leaf agents stream ``chunks`` chunks; hop agents call their tool once, then answer briefly."""
    import uvicorn
    from tests.fakes.openai_server import FakeModel, Step, ToolCall, build_app

    def system(body: dict[str, Any]) -> str:
        for msg in body.get("messages", []):
            if msg.get("role") in ("system", "developer"):
                return str(msg.get("content"))
        return ""

    def reply(body: dict[str, Any], headers: dict[str, str] | None = None) -> Step:
        prompt = system(body)
        if prompt.startswith(LEAF_PROMPT):
            return Step(text="tok " * chunks, chunks=chunks, delay=delay)
        if body["messages"][-1].get("role") == "tool":
            return Step(text="all done")
        target = prompt.split("next=")[1].split()[0]
        return Step(tool_calls=[ToolCall("invoke", {"agentSlug": target, "input": "answer please"})])

    fake = FakeModel()
    fake.next_step = reply  # type: ignore[method-assign]  # stateless: no queue, no request log
    uvicorn.run(build_app(fake), host="127.0.0.1", port=port, log_level="warning", access_log=False)


async def _post(c: httpx.AsyncClient, url: str, body: dict[str, Any], status: int = 201) -> dict[str, Any]:
    r = await c.post(url, json=body)
    assert r.status_code == status, f"{url}: {r.status_code} {r.text}"
    return r.json()


async def _setup(c: httpx.AsyncClient, fake_url: str) -> None:
    await c.get("/api/health")
    await _post(c, "/api/auth/signup", {"username": "admin", "password": "password123"}, status=201)
    c.headers["X-CSRF-Token"] = c.cookies.get("agentloft_csrf") or ""
    await _post(c, "/api/admin/models", {"name": "Fake", "provider": "openai", "baseUrl": fake_url,
                                         "model": "fake-model", "isDefault": True})
    tool = await _post(c, "/api/agent-tools", {"slug": "invoke", "name": "Invoke", "type": "agent-invoke",
                                               "config": {"maxRecursionDepth": 3, "maxOutputTokens": 100_000}})
    chain = ["leaf", "hop1", "hop2", "hop3"]
    for i, slug in enumerate(chain):
        prompt = LEAF_PROMPT if i == 0 else f"HOP next={chain[i - 1]}"
        agent = await _post(c, "/api/admin/agents", {"slug": slug, "name": slug, "systemPrompt": prompt,
                                                     "a2aCallable": True, "maxOutputTokens": 100_000})
        if i:
            r = await c.put(f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": tool["id"]}])
            assert r.status_code == 200, r.text


async def _panel(c: httpx.AsyncClient, task_id: str) -> int:
    """Read the side panel's stream to its end, as the chat page does; returns the words it carried."""
    async with c.stream("GET", f"/api/agents/a2a/stream?taskId={task_id}") as r:
        assert r.status_code == 200
        return sum([line.count("tok") async for line in r.aiter_lines() if '"text-delta"' in line])


async def _chat(c: httpx.AsyncClient, slug: str, chunks: int) -> float:
    """One chat turn, read as the page reads it: the reply's stream and, for a hop, the panel's."""
    started = time.perf_counter()
    panels: list[asyncio.Task[int]] = []
    text_chunks = 0
    async with c.stream("POST", f"/api/agents/{slug}/chat", json={"message": "go"}, timeout=300) as r:
        assert r.status_code == 200
        async for line in r.aiter_lines():
            assert '"tool-output-error"' not in line, line
            if '"text-delta"' in line:
                text_chunks += line.count("tok")  # deltas may arrive merged; count the words
            if '"data-a2a-task-started"' in line:
                task_id = json.loads(line[len("data: "):])["data"]["taskId"]
                panels.append(asyncio.create_task(_panel(c, task_id)))
    panel_chunks = sum(await asyncio.gather(*panels))
    elapsed = time.perf_counter() - started
    if slug in ("leaf", "hop1"):
        assert max(text_chunks, panel_chunks) >= chunks, "the leaf's reply streamed in full"
    return elapsed


async def _model_direct(fake_url: str, chunks: int) -> float:
    """The floor: the callee's model stream read directly, no agentloft in between."""
    body = {"model": "fake-model", "stream": True, "messages": [{"role": "system", "content": LEAF_PROMPT},
                                                                 {"role": "user", "content": "go"}]}
    async with httpx.AsyncClient(timeout=300) as c:
        started = time.perf_counter()
        async with c.stream("POST", f"{fake_url}/chat/completions", json=body) as r:
            n = sum([1 async for line in r.aiter_lines() if '"content"' in line])
        elapsed = time.perf_counter() - started
    assert n >= chunks
    return elapsed


async def _measure(base: str, fake_url: str, runs: int, chunks: int) -> dict[str, float]:
    async with httpx.AsyncClient(base_url=base, timeout=300) as c:
        await _setup(c, fake_url)
        await _chat(c, "hop1", chunks)  # warm-up: imports, connection pools, first queries
        times: dict[str, list[float]] = {"model": [], "leaf": [], "hop1": [], "hop3": []}
        for _ in range(runs):
            times["model"].append(await _model_direct(fake_url, chunks))
            for slug in ("leaf", "hop1", "hop3"):
                times[slug].append(await _chat(c, slug, chunks))
    return {slug: statistics.median(values) for slug, values in times.items()}


def _report(result: dict[str, float], args: argparse.Namespace) -> None:
    model, direct = result["model"], result["leaf"]
    print(f"agent-invoke hops: {args.chunks}-chunk reply, {args.delay * 1000:g} ms between model chunks, "
          f"median of {args.runs} runs")
    print(f"  callee's model, read directly   {model * 1000:8.1f} ms   1.00x")
    print(f"  chat with the callee (depth 0)  {direct * 1000:8.1f} ms   {direct / model:.2f}x")
    for depth, slug in ((1, "hop1"), (3, "hop3")):
        total = result[slug]
        per_hop = (total - direct) / depth
        print(f"  depth {depth} ({slug})                {total * 1000:8.1f} ms   {total / model:.2f}x   "
              f"per hop {per_hop * 1000:+.1f} ms = {per_hop / model:+.1%} of the reply "
              f"({'meets' if per_hop / model < 0.10 else 'misses'} the 10% goal)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
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
    fake_port, app_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as data_dir:
        fake_args = ("--serve-fake", str(fake_port), "--chunks", str(args.chunks), "--delay", str(args.delay))
        procs = [spawn("bench.a2a", *fake_args),
                 spawn("bench.a2a", "--serve-app", str(app_port), "--data-dir", data_dir)]
        try:
            base, fake_url = f"http://127.0.0.1:{app_port}", f"http://127.0.0.1:{fake_port}/v1"

            async def run() -> dict[str, float]:
                await wait_up(f"{fake_url}/models")
                await wait_up(f"{base}/api/health")
                return await _measure(base, fake_url, args.runs, args.chunks)

            _report(asyncio.run(run()), args)
        finally:
            stop_all(procs)


if __name__ == "__main__":
    main()
