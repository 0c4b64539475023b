"""Where a chat turn's CPU goes, layer by layer, in one process: the floor each layer under agentloft sets.

``bench.turn_cost`` measures the whole server (HTTP in, engine, database, HTTP out). This script runs the
same follow-up turn of the Assistant (its default tools, a one-turn history) inside one process, against
the same fake model (``bench.stream_relay --serve-fake``, its own process), through growing stacks:

- ``http``: the model request alone: the JSON body pydantic-ai sends for this turn, POSTed with the app's
  pooled ``httpx2`` client and read to the end (what any Python client on this transport pays);
- ``model layer``: pydantic-ai's model layer alone (``Model.request_stream`` of the app's model, as
  ``pydantic_ai.direct.model_request_stream`` calls it) for the same request: the session's history, the
  Assistant's instructions and tool definitions, the app's settings (what a provider's request and its
  parsing cost in pydantic-ai);
- ``pydantic-ai bare``: ``Agent.run_stream_events`` of a plain agent on the app's model: text output, no
  tools, no history, no instructions (what the agent framework costs before anything of ours);
- ``pydantic-ai``: the same with an agent (text or deferred tool calls as output), the Assistant's
  toolset and instructions, the session's history and the app's settings (the agent run the engine used
  before it kept its own loop);
- ``steps``: the engine's own loop over the model layer (``chat.steps.TurnSteps``) with the same inputs;
- ``+ ui stream``: the loop's events through the engine's Vercel UI-message-stream encoder and the parts
  collector (what turning events into the chunks a client reads adds);
- ``engine``: ``chat.engine.run_turn``: the whole turn without the HTTP server: the session claimed, both
  messages written, the stream buffered, the reply, its parts, its search index and the history saved.

Scenarios:

- ``cpu``: this process's CPU (``time.process_time``: every thread, so the SQLite writer's too), per turn
  and per chunk fitted from replies of 10 and 2,000 chunks, in blocks that alternate between the layers;
- ``first``: the wall time from a turn's start to its first text (for the engine: the first text a reader
  of the session's stream gets), layers interleaved;
- ``concurrent``: the wall time of 50 turns of 500 chunks at once, per layer, against ``http``'s.

Each layer's figure is the floor the layers below it set for agentloft's turn: what ``bench.turn_cost``
measures over HTTP cannot go below it without changing the layer.

    python -m bench.turn_floor [--scenarios cpu,first,concurrent] [--rounds 3] [--turns 30]
                               [--first-runs 20] [--concurrent 50] [--concurrent-chunks 500]
                               [--profile LAYER:FILE]

``--profile engine:/tmp/engine.prof`` records cProfile over that layer's 10-chunk turns instead (for
``pstats``; the profiler multiplies the cost, so only the shares mean something).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, Protocol

import httpx
from tests.fakes.openai_server import free_port

from bench.common import admin_with_fake_model, spawn, wait_up

SIZES = (10, 2000)
# the layer each one adds to (the agent run and the engine's loop both stand on the model layer's request)
BASES = {"model layer": "http", "pydantic-ai bare": "http", "pydantic-ai": "pydantic-ai bare", "steps": "model layer",
         "+ ui stream": "steps", "engine": "+ ui stream"}
Mark = Callable[[], None]


class Layer(Protocol):
    """One stack: a turn of ``chunks`` chunks; ``mark`` is called at its first text."""

    def __call__(self, chunks: int, mark: Mark | None = None) -> Awaitable[None]: ...


def _once(mark: Mark | None) -> Mark | None:
    """``mark`` made to fire on its first call only (None stays None)."""
    if mark is None:
        return None
    fired = False

    def fire() -> None:
        nonlocal fired
        if not fired:
            fired = True
            mark()

    return fire


async def _setup_app(data_dir: str, fake_url: str) -> tuple[Any, Any]:
    """An app with first-run defaults, its admin, and the default model pointed at the fake."""
    from agentloft.app import create_app
    from agentloft.core.settings import load_settings

    app = create_app(load_settings(data_dir=Path(data_dir), env="test", secret_key="bench-secret",
                                   max_running_chats_per_user=0))
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        await admin_with_fake_model(client, fake_url)
    return app, lifespan


class Layers:
    """The stacks, each one call per turn of ``chunks`` chunks, on the Assistant's inputs."""

    def __init__(self, rt: Any, agent: Any, inputs: Any, user_id: int) -> None:
        self.rt, self.agent, self.inputs, self.user_id = rt, agent, inputs, user_id
        self.history: str | None = None
        self.session_id = ""
        self.request_body = b""
        self.fresh: list[str] = []  # sessions ready for a measured engine turn
        self._bare: Any = None

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
        """The exact bytes the engine's loop sends for a follow-up turn, caught by an httpx2 event hook."""
        seen: list[bytes] = []
        client = self.rt.models.http_client()

        async def hook(request: Any) -> None:
            seen.append(request.content)

        client.event_hooks["request"].append(hook)
        try:
            await self.steps(10)
        finally:
            client.event_hooks["request"].remove(hook)
        return seen[0]

    def _runner(self, chunks: int) -> Any:
        from pydantic_ai.usage import UsageLimits

        from agentloft.chat.engine import _history

        model, toolset, settings = self._turn_inputs()
        agent = self.rt.models.agent(model, self.agent.system_prompt or None)
        return agent.run_stream_events(
            f"go {chunks}", message_history=_history(self.history) or None,
            toolsets=[toolset] if toolset else None,
            usage_limits=UsageLimits(request_limit=self.agent.max_steps), model_settings=settings)

    def _turn_inputs(self) -> tuple[Any, Any, Any]:
        """The app's model, the Assistant's toolset and the turn's settings, as the engine makes them."""
        from agentloft.chat.engine import PreparedTurn, _settings
        from agentloft.chat.toolset import RunScope, RunToolset
        from agentloft.llm import service as llm_service

        rt, turn_tools = self.rt, self.inputs.tools
        model = rt.models.model(llm_service.spec_of(row=self.inputs.model_row, box=rt.box))
        scope = RunScope(runtime=rt, user_id=self.user_id, user_role="admin", session_id=self.session_id,
                         agent_id=self.agent.id)
        turn = PreparedTurn(session_id=self.session_id, buffer_key="x", message_id="x", scope=scope,
                            model_row=self.inputs.model_row, model_config_id=None, system_prompt="",
                            max_steps=self.agent.max_steps, max_tokens=self.agent.max_output_tokens,
                            tools=turn_tools, history=self.history)
        return model, RunToolset(turn_tools, scope) if turn_tools else None, _settings(rt, turn)

    def _steps(self, chunks: int) -> Any:
        from agentloft.chat.engine import _history
        from agentloft.chat.steps import TurnSteps

        model, toolset, settings = self._turn_inputs()
        return TurnSteps(model=model, toolset=toolset, prompt=f"go {chunks}", history=_history(self.history),
                         deferred=None, instructions=self.agent.system_prompt or None, settings=settings,
                         max_steps=self.agent.max_steps)

    async def model_layer(self, chunks: int, mark: Mark | None = None) -> None:
        from pydantic_ai import RunContext
        from pydantic_ai.messages import InstructionPart, ModelRequest, UserPromptPart
        from pydantic_ai.models import ModelRequestParameters
        from pydantic_ai.usage import RunUsage

        from agentloft.chat.engine import _history

        model, toolset, settings = self._turn_inputs()
        ctx = RunContext(deps=None, model=model, usage=RunUsage())
        tools = await toolset.get_tools(ctx) if toolset is not None else {}
        instructions = self.agent.system_prompt or None
        params = ModelRequestParameters(
            function_tools=[t.tool_def for t in tools.values()],
            instruction_parts=[InstructionPart(content=instructions)] if instructions else None)
        messages = [*_history(self.history),
                    ModelRequest(parts=[UserPromptPart(f"go {chunks}")], instructions=instructions)]
        await self._events(model.request_stream(model.prepare_messages(messages, params), settings, params, ctx), mark)

    async def steps(self, chunks: int, mark: Mark | None = None) -> None:
        await self._stream(self._steps(chunks).events(), mark)

    async def http(self, chunks: int, mark: Mark | None = None) -> None:
        body = self.request_body.replace(b"go 10", f"go {chunks}".encode())
        client = self.rt.models.http_client()
        url = f"{self.inputs.model_row.base_url.rstrip('/')}/chat/completions"
        fire = _once(mark)
        async with client.stream("POST", url, content=body, headers={"content-type": "application/json"}) as r:
            async for data in r.aiter_bytes():
                if fire is not None and b'"content": "tok' in data:
                    fire()

    async def bare(self, chunks: int, mark: Mark | None = None) -> None:
        from pydantic_ai import Agent

        from agentloft.llm import service as llm_service

        if self._bare is None:
            model = self.rt.models.model(llm_service.spec_of(row=self.inputs.model_row, box=self.rt.box))
            self._bare = Agent(model, output_type=str)
        await self._events(self._bare.run_stream_events(f"go {chunks}"), mark)

    async def pydantic_ai(self, chunks: int, mark: Mark | None = None) -> None:
        await self._events(self._runner(chunks), mark)

    async def _events(self, runner: Any, mark: Mark | None) -> None:
        async with runner as events:
            await self._stream(events, mark)

    async def _stream(self, events: AsyncIterator[Any], mark: Mark | None) -> None:
        from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta

        fire = _once(mark)
        async for event in events:
            if fire is not None and (
                    (isinstance(event, PartStartEvent) and isinstance(event.part, TextPart) and event.part.content)
                    or (isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta))):
                fire()

    async def ui_stream(self, chunks: int, mark: Mark | None = None) -> None:
        from pydantic_ai.ui.vercel_ai.response_types import TextDeltaChunk

        from agentloft.chat.parts import PartsCollector
        from agentloft.chat.stream import EngineEventStream

        stream = EngineEventStream(None, sdk_version=6, server_message_id="x", max_steps=self.agent.max_steps)
        collector = PartsCollector([])

        fire = _once(mark)
        async for chunk in stream.transform_stream(self._steps(chunks).events()):
            collector.feed(chunk)
            stream.encode_event(chunk)
            if fire is not None and isinstance(chunk, TextDeltaChunk):
                fire()

    async def engine(self, chunks: int, mark: Mark | None = None) -> None:
        await self._engine_turn(chunks, self.fresh.pop(), mark=mark)

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

    async def _engine_turn(self, chunks: int, session_id: str, create: Any = None, mark: Mark | None = None) -> None:
        from agentloft.chat import engine

        request = engine.TurnRequest(user_id=self.user_id, user_role="admin", agent=self.agent,
                                     session_id=session_id, user_text=f"go {chunks}")
        turn = await engine.prepare_turn(self.rt, request, create=create, inputs=self.inputs)
        reader = None if mark is None else asyncio.create_task(self._first_text(turn.buffer_key, mark))
        try:
            result = await engine.drive(self.rt, turn)
        finally:
            if reader is not None:
                reader.cancel()
        assert result.status == "complete", result

    async def _first_text(self, key: str, mark: Mark) -> None:
        """Call ``mark`` when the first text reaches a reader following the turn's stream."""
        async for frame in self.rt.buffers.subscribe(key):
            if '"text-delta"' in frame:
                mark()
                return


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
    from agentloft.groups import access

    rt = app.state.runtime
    async with rt.db.read_session() as db:
        agent = await agents_service.get_enabled_agent_by_slug(db=db, slug="assistant")
        inputs = await engine.load_inputs(db, rt, agent=agent, user_id=1, viewer=access.Viewer(role="admin"))
    layers = Layers(rt, agent, inputs, user_id=1)
    await layers.prepare()
    named: dict[str, Layer] = {"http": layers.http, "model layer": layers.model_layer,
                               "pydantic-ai bare": layers.bare, "pydantic-ai": layers.pydantic_ai,
                               "steps": layers.steps, "+ ui stream": layers.ui_stream, "engine": layers.engine}
    if args.profile:
        name, _, path = args.profile.partition(":")
        await _profile(layers, named[name], args.turns, path)
        return
    print(f"one process, follow-up turns of the Assistant ({len(inputs.tools)} tools), medians of {args.rounds} rounds")
    scenarios = args.scenarios.split(",")
    if "cpu" in scenarios:
        await _cpu(layers, named, args)
    if "first" in scenarios:
        await _first(layers, named, args)
    if "concurrent" in scenarios:
        await _concurrent(layers, named, args)


async def _cpu(layers: Layers, named: dict[str, Layer], args: argparse.Namespace) -> None:
    samples: dict[tuple[str, int], list[float]] = {(n, c): [] for n in named for c in SIZES}
    for _ in range(args.rounds):
        for name, layer in named.items():
            for chunks in SIZES:
                turns = args.turns if chunks == 10 else max(3, args.turns // 6)
                samples[name, chunks].append(await _block(layers, layer, chunks, turns))
    print("cpu: CPU seconds of the process per turn and per chunk (fitted from 10- and 2,000-chunk replies)")
    print(f"  {'layer':16} {'per turn':>9} {'per chunk':>10}")
    per_turns: dict[str, float] = {}
    for name in named:
        small, big = (statistics.median(samples[name, c]) for c in SIZES)
        per_chunk = (big - small) / (SIZES[1] - SIZES[0])
        per_turn = per_turns[name] = small - SIZES[0] * per_chunk
        base = BASES.get(name)
        over = f"   (+{(per_turn - per_turns[base]) * 1e3:.2f} ms over {base})" if base in per_turns else ""
        print(f"  {name:16} {per_turn * 1e3:7.2f}ms {per_chunk * 1e6:8.2f}us{over}")


async def _first(layers: Layers, named: dict[str, Layer], args: argparse.Namespace) -> None:
    """Wall time from the start of a 2,000-chunk turn to its first text, layers interleaved."""
    times: dict[str, list[float]] = {n: [] for n in named}
    await layers.refill(args.first_runs * 2 + 2)
    for _ in range(args.first_runs):
        for name, layer in named.items():
            started = time.perf_counter()
            seen: list[float] = []
            await layer(2000, lambda seen=seen: seen.append(time.perf_counter()))
            times[name].append(seen[0] - started)
    floor = statistics.median(times["http"])
    print(f"first: time to the first text of a 2,000-chunk reply, median of {args.first_runs}")
    for name in named:
        value = statistics.median(times[name])
        print(f"  {name:16} {value * 1e3:7.1f} ms  (+{(value - floor) * 1e3:.1f} ms over http)")


async def _concurrent(layers: Layers, named: dict[str, Layer], args: argparse.Namespace) -> None:
    """Wall time of ``--concurrent`` turns of ``--concurrent-chunks`` chunks at once, against http's."""
    n, chunks = args.concurrent, args.concurrent_chunks
    walls: dict[str, list[float]] = {name: [] for name in named}
    for _ in range(args.rounds):
        for name, layer in named.items():
            if layer == layers.engine:
                await layers.refill(n)
            started = time.perf_counter()
            await asyncio.gather(*(layer(chunks, None) for _ in range(n)))
            walls[name].append(time.perf_counter() - started)
    floor = statistics.median(walls["http"])
    print(f"concurrent: {n} turns of {chunks} chunks at once, wall time, medians of {args.rounds} rounds")
    for name in named:
        value = statistics.median(walls[name])
        print(f"  {name:16} {value:6.2f} s  ({value / floor:.2f}x http)")


def _args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--turns", type=int, default=30, help="turns per block of 10-chunk replies (a sixth for 2,000)")
    p.add_argument("--scenarios", default="cpu,first,concurrent")
    p.add_argument("--first-runs", type=int, default=20)
    p.add_argument("--concurrent", type=int, default=50)
    p.add_argument("--concurrent-chunks", type=int, default=500)
    p.add_argument("--profile", help="LAYER:FILE: cProfile that layer's 10-chunk turns into FILE")
    return p.parse_args()


if __name__ == "__main__":
    asyncio.run(main(_args()))
