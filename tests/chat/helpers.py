"""Helpers for the chat tests: read UI-message-stream SSE over real HTTP, set up agents and tools.

``register_test_tools`` installs a few tool types into the live app through the tool registry's public
``register`` call, exactly as an add-on would; they give the tests tools with known behaviour (slow,
failing, emitting data chunks, asking approval for some inputs) independent of the built-in types.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any, ClassVar

import httpx
from pydantic import BaseModel

from agentloft.tools.base import ToolContext, ToolResult, ToolType
from tests.support import ApiClient, LiveApp


def parse_sse(text: str) -> list[Any]:
    """Decode ``data: ...`` frames: JSON chunks, or the string ``[DONE]``."""
    out: list[Any] = []
    for block in text.split("\n\n"):
        block = block.strip()
        if not block:
            continue
        assert block.startswith("data: "), f"not an SSE data frame: {block[:80]!r}"
        payload = block[len("data: "):]
        out.append(payload if payload == "[DONE]" else json.loads(payload))
    return out


def types_of(chunks: list[Any]) -> list[str]:
    return [c if isinstance(c, str) else c["type"] for c in chunks]


def text_of(chunks: list[Any]) -> str:
    return "".join(c["delta"] for c in chunks if isinstance(c, dict) and c["type"] == "text-delta")


def of_type(chunks: list[Any], kind: str) -> list[dict[str, Any]]:
    return [c for c in chunks if isinstance(c, dict) and c["type"] == kind]


class Streamed:
    def __init__(self, resp: httpx.Response) -> None:
        self.status = resp.status_code
        self.headers = resp.headers
        self.body = resp.text
        self.chunks = parse_sse(resp.text) if resp.headers.get("content-type", "").startswith(
            "text/event-stream") else []
        self.session_id = resp.headers.get("x-session-id")

    @property
    def types(self) -> list[str]:
        return types_of(self.chunks)

    @property
    def text(self) -> str:
        return text_of(self.chunks)

    def of(self, kind: str) -> list[dict[str, Any]]:
        return of_type(self.chunks, kind)

    def json(self) -> Any:
        return json.loads(self.body)


def post_stream(client: ApiClient, url: str, body: dict[str, Any]) -> Streamed:
    """POST and read the whole SSE answer (the run's end closes it)."""
    return Streamed(client.post(url, json=body))


def chat(client: ApiClient, slug: str, message: str, session_id: str | None = None) -> Streamed:
    body: dict[str, Any] = {"message": message}
    if session_id:
        body["sessionId"] = session_id
    return post_stream(client, f"/api/agents/{slug}/chat", body)


def make_agent(admin: ApiClient, slug: str = "helper", **fields: Any) -> dict[str, Any]:
    body = {"slug": slug, "name": slug.title(), "systemPrompt": f"You are {slug}.", **fields}
    return admin.ok("POST", "/api/admin/agents", json=body)


def make_tool(admin: ApiClient, slug: str, type_: str, **fields: Any) -> dict[str, Any]:
    body = {"slug": slug, "name": slug, "type": type_, **fields}
    return admin.ok("POST", "/api/agent-tools", json=body)


def attach(admin: ApiClient, agent_id: int, *links: dict[str, Any]) -> None:
    admin.ok("PUT", f"/api/admin/agents/{agent_id}/tools", json=list(links))


def wait_for(predicate: Any, timeout: float = 10.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not reached in time")


REPLY_SQL = "SELECT status, content FROM agent_messages WHERE session_id = ? AND role = 'assistant'"


def reply_row(app: LiveApp, session_id: str) -> tuple[str, str]:
    """The session's assistant message as saved: (status, content)."""
    return app.sql(REPLY_SQL, (session_id,))[0]


def checkpoint_mid_stream(app: LiveApp, resp: Any, deltas: int = 15) -> tuple[tuple[str, str], Iterator[str]]:
    """Read ``deltas`` text deltas of a streaming chat response, then wait for the reply's first saved text;
    returns that row and the rest of the response's lines (a stream can be iterated once)."""
    lines = resp.iter_lines()
    seen = 0
    for line in lines:
        seen += '"text-delta"' in line
        if seen >= deltas:
            break
    session_id = resp.headers["x-session-id"]
    row = wait_for(lambda: (saved := reply_row(app, session_id))[1] and saved, timeout=5)
    return row, lines


def session_status(app: LiveApp, session_id: str) -> str:
    return app.sql("SELECT status FROM agent_sessions WHERE id = ?", (session_id,))[0][0]


# --- add-on tool types ------------------------------------------------------------------------------


class _NoConfig(BaseModel):
    pass


class EchoInput(BaseModel):
    text: str


class EchoTool(ToolType[_NoConfig, EchoInput]):
    slug = "test-echo"
    name = "Echo"
    description = "Returns its text."
    Config = _NoConfig
    Input = EchoInput

    def describe(self, config: _NoConfig) -> str:
        return "Echo the text back."

    async def execute(self, input: EchoInput, config: _NoConfig, ctx: ToolContext) -> ToolResult:
        return ToolResult.ok({"echo": input.text, "approved": ctx.approved, "sessionId": ctx.session_id})


class SlowInput(BaseModel):
    seconds: float = 1.0


class SlowTool(ToolType[_NoConfig, SlowInput]):
    slug = "test-slow"
    name = "Slow"
    description = "Sleeps."
    Config = _NoConfig
    Input = SlowInput

    def describe(self, config: _NoConfig) -> str:
        return "Sleep a while."

    async def execute(self, input: SlowInput, config: _NoConfig, ctx: ToolContext) -> ToolResult:
        await ctx.emit("test-progress", {"sleeping": input.seconds})
        await asyncio.sleep(input.seconds)
        return ToolResult.ok({"slept": input.seconds})


class FailTool(ToolType[_NoConfig, EchoInput]):
    slug = "test-fail"
    name = "Fail"
    description = "Always raises."
    Config = _NoConfig
    Input = EchoInput

    def describe(self, config: _NoConfig) -> str:
        return "Fails."

    async def execute(self, input: EchoInput, config: _NoConfig, ctx: ToolContext) -> ToolResult:
        raise RuntimeError(f"broken on {input.text}")


class GuardedInput(BaseModel):
    action: str


class GuardedTool(ToolType[_NoConfig, GuardedInput]):
    """Asks for approval only for ``delete``, like the document tool's ``approvalRequiredActions``."""

    slug = "test-guarded"
    name = "Guarded"
    description = "Does an action; deleting needs approval."
    Config = _NoConfig
    Input = GuardedInput

    def describe(self, config: _NoConfig) -> str:
        return "Do an action."

    parsed: ClassVar[list[dict[str, Any]]] = []  # every input it was asked to validate, to count them

    def parse_input(self, raw: dict[str, Any], config: _NoConfig) -> BaseModel:
        GuardedTool.parsed.append(dict(raw))
        return super().parse_input(raw, config)

    def needs_approval(self, input: GuardedInput, config: _NoConfig, ctx: ToolContext) -> bool:
        return input.action == "delete"

    async def execute(self, input: GuardedInput, config: _NoConfig, ctx: ToolContext) -> ToolResult:
        return ToolResult.ok({"did": input.action, "approved": ctx.approved})


TEST_TYPES = (EchoTool(), SlowTool(), FailTool(), GuardedTool())


def register_test_tools(app: LiveApp) -> None:
    runtime = app.server.server.config.app.state.runtime
    registry = runtime.registry
    for tool_type in TEST_TYPES:
        if tool_type.slug not in registry:
            registry.register(tool_type)
