"""Model transport benchmark: does our stream reader (``llm.lean_openai``) still earn its place over the
``openai`` SDK reading its own stream on its own ``httpx2`` client?

A paced fake model runs in a child process (raw asyncio on uvloop, so it is not the bottleneck; its CPU
is printed): every chat gets ``--chunks`` one-word chunks, one every ``pace`` ms, then finish, usage and
``[DONE]``. This process plays the chat engine's part: per chat, a pydantic-ai agent on the variant's
model runs ``run_stream_events`` and each event is turned into UI-message-stream frames (the engine's
``EngineEventStream``), as in a real turn, minus the database and the buffer. For each model pace and
number of concurrent chats, each variant runs ``--rounds`` times, interleaved, and the medians are
printed with their ratio to the baseline measured in the same run:

- ``sdk`` (baseline): ``OpenAIChatModel`` on a plain ``AsyncOpenAI`` over one shared ``httpx2`` client
  made by pydantic-ai's factory, the way pydantic-ai is used out of the box;
- ``lean``: what the app builds (``llm.providers.build_model``): the same client, our reader.

(A third variant, our reader over a hand-written HTTP/1.1 transport on ``httptools``, was measured
before that transport was removed; see docs/benchmarks.md.)

Measured: wall time of the round (and its excess over the model's own pace), this process's CPU seconds
per chunk, and the events pydantic-ai handled per chunk (below 1 when deltas were merged).

    python -m bench.model_transport [--chunks 200] [--rounds 3] [--paces 5 30] [--concurrency 1 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.fakes.openai_server import free_port

from bench.common import spawn

# --- the paced fake model ------------------------------------------------------------------------------


def _chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    payload = {"id": "chatcmpl-bench", "object": "chat.completion.chunk", "created": 1, "model": "fake",
               "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


WORD = _chunk({"content": "tok "})
HEAD = _chunk({"role": "assistant", "content": ""})
TAIL = (_chunk({}, "stop")
        + b'data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":1,"model":"fake","choices":[],'
          b'"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}\n\n'
        + b"data: [DONE]\n\n")


def _framed(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


async def _serve_stream(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """HTTP/1.1 with keep-alive: each request's last user message says ``go N PACE_MS``."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = json.loads(await reader.readexactly(length)) if length else {}
            words = str(body.get("messages", [{}])[-1].get("content", "go 10 5")).split()
            count, pace = int(words[1]), float(words[2]) / 1000
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"
                         + _framed(HEAD))
            for _ in range(count):
                await asyncio.sleep(pace)
                writer.write(_framed(WORD))
            writer.write(_framed(TAIL) + b"0\r\n\r\n")
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


def serve_fake(port: int) -> None:
    import uvloop

    async def main() -> None:
        server = await asyncio.start_server(_serve_stream, "127.0.0.1", port, backlog=1024)
        async with server:
            await server.serve_forever()

    uvloop.run(main())


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


# --- the variants ------------------------------------------------------------------------------------------


def _variants(base_url: str) -> dict[str, Callable[[], tuple[Any, Callable[[], Awaitable[None]]]]]:
    """Each variant: a factory of (model, close)."""
    import httpx2
    from openai import AsyncOpenAI
    from pydantic_ai.models import create_async_httpx2_client
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from agentloft.llm.providers import ModelSpec, build_model

    timeout = httpx2.Timeout(120, connect=10)

    def sdk() -> tuple[Any, Callable[[], Awaitable[None]]]:
        http = create_async_httpx2_client(timeout=timeout)
        client = AsyncOpenAI(base_url=base_url, api_key="k", http_client=http)
        return OpenAIChatModel("fake", provider=OpenAIProvider(openai_client=client)), http.aclose

    def lean() -> tuple[Any, Callable[[], Awaitable[None]]]:
        http = create_async_httpx2_client(timeout=timeout)
        return build_model(ModelSpec("openai", "fake", base_url, "k"), http_client=http), http.aclose

    return {"sdk": sdk, "lean": lean}


# --- one chat, one round ---------------------------------------------------------------------------------


@dataclass
class Counts:
    events: int = 0
    chars: int = 0


async def _chat(agent: Any, chunks: int, pace_ms: float, counts: Counts) -> None:
    from pydantic_ai.messages import PartDeltaEvent, PartStartEvent

    from agentloft.chat.stream import EngineEventStream

    stream = EngineEventStream(None, sdk_version=6, server_message_id="m", max_steps=1)
    async with agent.run_stream_events(f"go {chunks} {pace_ms:g}") as events:

        async def counted() -> Any:
            async for event in events:
                if isinstance(event, PartStartEvent | PartDeltaEvent):
                    counts.events += 1
                yield event

        async for chunk in stream.transform_stream(counted()):
            frame = stream.encode_event(chunk)
            if '"text-delta"' in frame:
                counts.chars += len(chunk.delta)  # pyright: ignore[reportAttributeAccessIssue]  # a TextDeltaChunk
    if stream.failure_text:
        raise RuntimeError(f"a chat failed: {stream.failure_text}")


@dataclass
class Result:
    wall_s: float
    cpu_s: float
    fake_cpu_s: float
    events: int


async def _round(agent: Any, concurrency: int, chunks: int, pace_ms: float, fake_pid: int) -> Result:
    counts = Counts()
    cpu, fake_cpu, started = time.process_time(), cpu_seconds(fake_pid), time.perf_counter()
    await asyncio.gather(*(_chat(agent, chunks, pace_ms, counts) for _ in range(concurrency)))
    wall = time.perf_counter() - started
    result = Result(wall, time.process_time() - cpu, cpu_seconds(fake_pid) - fake_cpu, counts.events)
    if counts.chars != concurrency * chunks * len("tok "):
        raise RuntimeError(f"text lost: {counts.chars} characters")
    return result


# --- the run ------------------------------------------------------------------------------------------------


async def main(args: argparse.Namespace) -> None:
    from pydantic_ai import Agent, DeferredToolRequests

    port = free_port()
    fake = spawn("bench.model_transport", "--serve-fake", str(port))
    try:
        await _wait_port(port)
        factories = _variants(f"http://127.0.0.1:{port}/v1")
        names = [n for n in factories if n in args.variants]
        built = {name: factories[name]() for name in names}
        agents = {name: Agent(model, output_type=[str, DeferredToolRequests]) for name, (model, _) in built.items()}
        for agent in agents.values():  # warm up: imports, pools, first-request work
            await _round(agent, 2, 20, 0, fake.pid)
        print(f"{args.chunks} chunks per chat; medians of {args.rounds} interleaved rounds; "
              f"baseline: {names[0]}")
        print(f"{'pace':>5} {'chats':>5} {'variant':>15} {'wall s':>7} {'excess':>7} {'cpu us/chunk':>12} "
              f"{'ratio cpu':>9} {'ratio wall':>10} {'events/chunk':>12} {'fake cpu s':>10}")
        for pace in args.paces:
            for concurrency in args.concurrency:
                await _measure(args, agents, names, pace, concurrency, fake.pid)
        for _, close in built.values():
            await close()
    finally:
        fake.terminate()
        try:
            fake.wait(10)
        except subprocess.TimeoutExpired:
            fake.kill()


async def _measure(args: argparse.Namespace, agents: dict[str, Any], names: list[str], pace: float,
                   concurrency: int, fake_pid: int) -> None:
    rounds: dict[str, list[Result]] = {name: [] for name in names}
    for r in range(args.rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:  # a different order each round
            rounds[name].append(await _round(agents[name], concurrency, args.chunks, pace, fake_pid))
    chunks = concurrency * args.chunks
    ideal = args.chunks * pace / 1000
    base_cpu = statistics.median(x.cpu_s for x in rounds[names[0]])
    base_wall = statistics.median(x.wall_s for x in rounds[names[0]])
    for name in names:
        wall = statistics.median(x.wall_s for x in rounds[name])
        cpu = statistics.median(x.cpu_s for x in rounds[name])
        events = statistics.median(x.events for x in rounds[name]) / chunks
        fake_cpu = statistics.median(x.fake_cpu_s for x in rounds[name])
        print(f"{pace:>4g}ms {concurrency:>5} {name:>15} {wall:7.2f} {wall - ideal:+7.2f} "
              f"{cpu / chunks * 1e6:12.0f} {cpu / base_cpu:8.2f}x {wall / base_wall:9.2f}x {events:12.2f} "
              f"{fake_cpu:10.2f}", flush=True)


async def _wait_port(port: int, limit_s: float = 30) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError):
            _, writer = await asyncio.open_connection("127.0.0.1", port)
            writer.close()
            return
        await asyncio.sleep(0.05)
    raise RuntimeError("the fake model did not come up")


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--chunks", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--paces", type=float, nargs="+", default=[5, 30], help="ms between the model's chunks")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 100])
    p.add_argument("--variants", nargs="+", default=["sdk", "lean"])
    p.add_argument("--serve-fake", type=int, help=argparse.SUPPRESS)
    return p.parse_args()


if __name__ == "__main__":
    ns = _args()
    if ns.serve_fake:
        serve_fake(ns.serve_fake)
    else:
        import uvloop

        uvloop.run(main(ns))
