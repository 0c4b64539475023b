"""Where a chat turn's CPU goes, layer by layer, in one process: the floor each layer under agentloft sets.

``bench.turn_cost`` measures the whole server (HTTP in, engine, database, HTTP out). This script runs the
same follow-up turn of the Assistant (its default tools, a one-turn history) inside one process, against
the same fake model (``bench.stream_relay --serve-fake``, its own process), through growing stacks:

- ``http``: the model request alone: the JSON body pydantic-ai sends for this turn, POSTed with the app's
  pooled ``httpx2`` client and read to the end (what any Python client on this transport pays);
- ``pydantic-ai``: ``Agent.run_stream_events`` with the app's model, agent, toolset and settings, events
  read and dropped (what the agent framework adds to the request);
- ``+ ui stream``: the same events through the engine's Vercel UI-message-stream encoder and the parts
  collector (what turning events into the chunks a client reads adds);
- ``engine``: ``chat.engine.run_turn``: the whole turn without the HTTP server: the session claimed, both
  messages written, the stream buffered, the reply, its parts, its search index and the history saved.

CPU is this process's (``time.process_time``: every thread, so the SQLite writer's too), per turn and per
chunk fitted from replies of 10 and 2,000 chunks, in blocks that alternate between the layers. Each
layer's "per turn" is then the floor the layers below it set for agentloft's turn.

    python -m bench.turn_floor [--rounds 3] [--turns 30] [--profile LAYER:FILE]

``--profile engine:/tmp/engine.prof`` records cProfile over that layer's 10-chunk turns instead (for
``pstats``; the profiler multiplies the cost, so only the shares mean something).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from tests.fakes.openai_server import free_port

from bench.common import admin_with_fake_model, spawn, wait_up

SIZES = (10, 2000)
Layer = Callable[[int], Awaitable[None]]


async def _setup_app(data_dir: str, fake_url: str) -> tuple[Any, Any]:
    """An app with first-run defaults, its admin, and the default model pointed at the fake."""
    from agentloft.app import create_app
    from agentloft.core.settings import load_settings

    app = create_app(load_settings(data_dir=Path(data_dir), env="test", secret_key="bench-secret"))
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        await admin_with_fake_model(client, fake_url)
    return app, lifespan


class Layers:
    """The four stacks, each one call per turn of ``chunks`` chunks, on the Assistant's inputs."""

    def __init__(self, rt: Any, agent: Any, inputs: Any, user_id: int) -> None:
        self.rt, self.agent, self.inputs, self.user_id = rt, agent, inputs, user_id
        self.history: str | None = None
        self.session_id = ""
        self.request_body = b""
        self.fresh: list[str] = []  # sessions ready for a measured engine turn

    async def prepare(self) -> None:
        """One real turn gives the session whose history every layer continues, and the request body."""
        from agentloft.chat import service

        await self.refill(1)
        self.session_id = self.fresh.pop()
        async with self.rt.db.read_session() as db:
            session = await service.get_session_by_id(db=db, session_id=self.session_id)
            self.history = session.model_history
        self.request_body = await self._captured_body()

    async def _captured_body(self) -> bytes:
        """The exact bytes pydantic-ai sends for a follow-up turn, caught by an httpx2 event hook."""
        seen: list[bytes] = []
        client = self.rt.models.http_client()

        async def hook(request: Any) -> None:
            seen.append(request.content)

        client.event_hooks["request"].append(hook)
        try:
            await self.pydantic_ai(10)
        finally:
            client.event_hooks["request"].remove(hook)
        return seen[0]

    def _runner(self, chunks: int) -> Any:
        from pydantic_ai.usage import UsageLimits

        from agentloft.chat.engine import PreparedTurn, _history, _settings
        from agentloft.chat.toolset import RunScope, RunToolset
        from agentloft.llm import service as llm_service

        rt, turn_tools = self.rt, self.inputs.tools
        model = rt.models.model(llm_service.spec_of(row=self.inputs.model_row, box=rt.box))
        agent = rt.models.agent(model, self.agent.system_prompt or None)
        scope = RunScope(runtime=rt, user_id=self.user_id, user_role="admin", session_id=self.session_id,
                         agent_id=self.agent.id)
        turn = PreparedTurn(session_id=self.session_id, buffer_key="x", message_id="x", scope=scope,
                            model_row=self.inputs.model_row, model_config_id=None, system_prompt="",
                            max_steps=self.agent.max_steps, max_tokens=self.agent.max_output_tokens,
                            tools=turn_tools, history=self.history)
        return agent.run_stream_events(
            f"go {chunks}", message_history=_history(self.history) or None,
            toolsets=[RunToolset(turn_tools, scope)] if turn_tools else None,
            usage_limits=UsageLimits(request_limit=self.agent.max_steps), model_settings=_settings(rt, turn))

    async def http(self, chunks: int) -> None:
        body = self.request_body.replace(b"go 10", f"go {chunks}".encode())
        client = self.rt.models.http_client()
        url = f"{self.inputs.model_row.base_url.rstrip('/')}/chat/completions"
        async with client.stream("POST", url, content=body, headers={"content-type": "application/json"}) as r:
            async for _ in r.aiter_bytes():
                pass

    async def pydantic_ai(self, chunks: int) -> None:
        async with self._runner(chunks) as events:
            async for _ in events:
                pass

    async def ui_stream(self, chunks: int) -> None:
        from agentloft.chat.parts import PartsCollector
        from agentloft.chat.stream import EngineEventStream

        stream = EngineEventStream(None, sdk_version=6, server_message_id="x", max_steps=self.agent.max_steps)
        collector = PartsCollector([])

        async def events() -> Any:
            async with self._runner(chunks) as run:
                async for event in run:
                    yield event

        async for chunk in stream.transform_stream(events()):
            collector.feed(chunk)
            stream.encode_event(chunk)

    async def engine(self, chunks: int) -> None:
        await self._engine_turn(chunks, self.fresh.pop())

    async def refill(self, count: int) -> None:
        """``count`` sessions at the end of their first turn, each the start of one measured engine turn
        (the same follow-up turn every time, and its writes outside the measured time)."""
        from agentloft.chat import service
        from agentloft.core.ids import new_id

        for _ in range(count):
            session_id = new_id("as")
            create = service.NewSession(user_id=self.user_id, agent_id=self.agent.id, kind="agent")
            await self._engine_turn(10, session_id, create)
            self.fresh.append(session_id)

    async def _engine_turn(self, chunks: int, session_id: str, create: Any = None) -> None:
        from agentloft.chat import engine

        request = engine.TurnRequest(user_id=self.user_id, user_role="admin", agent=self.agent,
                                     session_id=session_id, user_text=f"go {chunks}")
        turn = await engine.prepare_turn(self.rt, request, create=create, inputs=self.inputs)
        result = await engine.drive(self.rt, turn)
        assert result.status == "complete", result


async def _block(layers: Layers, layer: Layer, chunks: int, turns: int) -> float:
    if layer == layers.engine:
        await layers.refill(turns + 1)
    await layer(chunks)  # warm
    start = time.process_time()
    for _ in range(turns):
        await layer(chunks)
    return (time.process_time() - start) / turns


async def _profile(layers: Layers, layer: Layer, turns: int, path: str) -> None:
    import cProfile

    if layer == layers.engine:
        await layers.refill(turns + 1)
    await layer(10)
    profiler = cProfile.Profile(time.process_time)
    profiler.enable()
    for _ in range(turns):
        await layer(10)
    profiler.disable()
    profiler.dump_stats(path)
    print(f"profile of {turns} turns written to {path}")


async def main(args: argparse.Namespace) -> None:
    fake_port = free_port()
    fake_url = f"http://127.0.0.1:{fake_port}"
    fake = spawn("bench.stream_relay", "--serve-fake", str(fake_port))
    try:
        await wait_up(f"{fake_url}/v1/models")
        with tempfile.TemporaryDirectory() as data:
            app, lifespan = await _setup_app(data, fake_url)
            try:
                await _measure(app, args)
            finally:
                await lifespan.__aexit__(None, None, None)
    finally:
        fake.terminate()
        fake.wait()


async def _measure(app: Any, args: argparse.Namespace) -> None:
    from agentloft.agents import service as agents_service
    from agentloft.chat import engine

    rt = app.state.runtime
    async with rt.db.read_session() as db:
        agent = await agents_service.get_enabled_agent_by_slug(db=db, slug="assistant")
        inputs = await engine.load_inputs(db, rt, agent=agent, user_id=1, user_role="admin")
    layers = Layers(rt, agent, inputs, user_id=1)
    await layers.prepare()
    named: dict[str, Layer] = {"http": layers.http, "pydantic-ai": layers.pydantic_ai,
                               "+ ui stream": layers.ui_stream, "engine": layers.engine}
    if args.profile:
        name, _, path = args.profile.partition(":")
        await _profile(layers, named[name], args.turns, path)
        return
    samples: dict[tuple[str, int], list[float]] = {(n, c): [] for n in named for c in SIZES}
    for _ in range(args.rounds):
        for name, layer in named.items():
            for chunks in SIZES:
                turns = args.turns if chunks == 10 else max(3, args.turns // 6)
                samples[name, chunks].append(await _block(layers, layer, chunks, turns))
    print(f"CPU of one process per follow-up turn of the Assistant ({len(inputs.tools)} tools), "
          f"medians of {args.rounds} rounds")
    print(f"  {'layer':14} {'per turn':>9} {'per chunk':>10}")
    below = 0.0
    for name in named:
        small, big = (statistics.median(samples[name, c]) for c in SIZES)
        per_chunk = (big - small) / (SIZES[1] - SIZES[0])
        per_turn = small - SIZES[0] * per_chunk
        print(f"  {name:14} {per_turn * 1e3:7.2f}ms {per_chunk * 1e6:8.2f}us   (+{(per_turn - below) * 1e3:.2f} ms)")
        below = per_turn


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--turns", type=int, default=30, help="turns per block of 10-chunk replies (a sixth for 2,000)")
    p.add_argument("--profile", help="LAYER:FILE: cProfile that layer's 10-chunk turns into FILE")
    return p.parse_args()


if __name__ == "__main__":
    asyncio.run(main(_args()))
