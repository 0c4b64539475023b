"""The conformance corpus (``tests/llm/corpus``): streams written in the documented wire formats of OpenAI
chat completions and of the Anthropic Messages API, each replayed byte for byte through the chat endpoint
three ways (one event per write, the whole body in one write, 7-byte writes). What the chat makes of them
(the text and reasoning the user sees, the tool calls, the tokens, the error, and the model history it
keeps) must equal what pydantic-ai parses from the same bytes through its own SDK clients, run directly
against the same fake server.

Tool calls go to tools that need approval, so each turn is exactly one model response.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ThinkingPart,
    ToolCallPart,
)
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider

from agentloft.llm.failures import describe_failure
from tests.chat.helpers import attach, chat, make_agent, make_tool, register_test_tools
from tests.fakes.anthropic_server import FakeAnthropic, FakeAnthropicServer, Reply
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step
from tests.fakes.sse import DELIVERIES, Writes
from tests.support import ApiClient, LiveApp

CORPUS = Path(__file__).parent / "corpus"
STREAMS = sorted(str(p.relative_to(CORPUS)) for p in CORPUS.glob("*/*.sse"))
MODEL = "corpus-model"
KEY = "sk-corpus"


@dataclass(frozen=True)
class Seen:
    """What a stream made: for the user and for the model history."""

    texts: tuple[str, ...]
    reasoning: tuple[str, ...]
    calls: tuple[tuple[str, str, Any], ...]  # (id, name, arguments)
    tokens: tuple[int, int]
    error: str | None
    history: tuple[Any, ...] | None  # the response's parts as the history keeps them; None after an error


def _part_key(part: Any) -> Any:
    if isinstance(part, TextPart):
        return ("text", part.content)
    if isinstance(part, ThinkingPart):
        return ("thinking", part.content, part.id, part.signature, part.provider_name)
    if isinstance(part, ToolCallPart):
        return ("call", part.tool_call_id, part.tool_name, part.args_as_dict())
    return (type(part).__name__,)


def _from_response(response: ModelResponse, error: BaseException | None) -> Seen:
    parts = response.parts
    return Seen(
        texts=tuple(p.content for p in parts if isinstance(p, TextPart) and p.content),
        reasoning=tuple(p.content for p in parts if isinstance(p, ThinkingPart) and p.content),
        calls=tuple((p.tool_call_id, p.tool_name, p.args_as_dict()) for p in parts if isinstance(p, ToolCallPart)),
        tokens=(response.usage.input_tokens, response.usage.output_tokens),
        error=describe_failure(error) if error is not None else None,
        history=None if error is not None else tuple(_part_key(p) for p in parts),
    )


def _from_chat(app: LiveApp, user: ApiClient, session_id: str) -> Seen:
    detail = user.ok("GET", f"/api/agent-sessions/{session_id}")
    reply = detail["messages"][-1]
    parts = reply["parts"]
    raw = app.sql("SELECT model_history FROM agent_sessions WHERE id = ?", (session_id,))[0][0]
    history = None
    if reply["status"] != "failed":
        responses = [m for m in ModelMessagesTypeAdapter.validate_json(raw) if isinstance(m, ModelResponse)]
        history = tuple(_part_key(p) for p in responses[-1].parts)
    return Seen(
        texts=tuple(p["text"] for p in parts if p["type"] == "text" and p["text"]),
        reasoning=tuple(p["text"] for p in parts if p["type"] == "reasoning" and p["text"]),
        calls=tuple((a["toolCallId"], a["toolName"], a["input"]) for a in detail["pendingApprovals"]),
        tokens=(reply["inputTokens"] or 0, reply["outputTokens"] or 0),
        error=reply["error"],
        history=history,
    )


async def _reference(model: Model) -> Seen:
    """pydantic-ai's own reading of the stream: its model on its SDK client, the parts and usage it
    built (up to the error, if the stream ends in one)."""
    error: BaseException | None = None
    async with contextlib.AsyncExitStack() as stack:
        streamed = await stack.enter_async_context(
            model.request_stream([ModelRequest.user_text_prompt("question")], None, ModelRequestParameters()))
        try:
            async for _ in streamed:
                pass
        except Exception as exc:
            error = exc
        return _from_response(streamed.get(), error)
    raise AssertionError("unreachable")


@pytest.fixture
def corpus_agent(app: LiveApp, admin: ApiClient, fake_model_server: FakeModelServer,
                 anthropic_server: FakeAnthropicServer) -> dict[str, int]:
    """One agent per wire format, each with two tools that need approval (the corpus calls them)."""
    register_test_tools(app)
    tools = [make_tool(admin, name, "test-guarded", needsApproval=True) for name in ("get_weather", "get_time")]
    agents = {}
    for provider, url in (("openai", fake_model_server.base_url), ("anthropic", anthropic_server.base_url)):
        model = admin.ok("POST", "/api/admin/models", json={"name": provider, "provider": provider, "baseUrl": url,
                                                            "model": MODEL, "apiKey": KEY})
        agent = make_agent(admin, provider, modelId=model["id"])
        attach(admin, agent["id"], *({"toolId": t["id"], "position": i} for i, t in enumerate(tools)))
        agents[provider] = agent["id"]
    return agents


def _send(fmt: str, body: bytes, writes: Writes, fake_model: FakeModel, fake_anthropic: FakeAnthropic) -> None:
    if fmt == "openai":
        fake_model.push(Step(raw=body, writes=writes))
    else:
        fake_anthropic.push(Reply(raw=body, writes=writes))


def _model(fmt: str, fake_model_server: FakeModelServer, anthropic_server: FakeAnthropicServer) -> Model:
    if fmt == "openai":
        return OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=fake_model_server.base_url, api_key=KEY))
    return AnthropicModel(MODEL, provider=AnthropicProvider(api_key=KEY, base_url=anthropic_server.base_url))


@pytest.mark.parametrize("stream", STREAMS)
async def test_the_chat_reads_every_corpus_stream_as_pydantic_ai_does(
    stream: str, app: LiveApp, user: ApiClient, corpus_agent: dict[str, int], fake_model: FakeModel,
    fake_model_server: FakeModelServer, fake_anthropic: FakeAnthropic, anthropic_server: FakeAnthropicServer,
) -> None:
    fmt = stream.split("/")[0]
    body = (CORPUS / stream).read_bytes()
    _send(fmt, body, "event", fake_model, fake_anthropic)
    model = _model(fmt, fake_model_server, anthropic_server)
    reference = await _reference(model)
    assert reference.texts or reference.calls  # the corpus stream says something
    for writes in DELIVERIES:
        _send(fmt, body, writes, fake_model, fake_anthropic)
        res = chat(user, fmt, "question")
        assert res.status == 200
        seen = _from_chat(app, user, res.session_id or "")
        assert seen == reference, f"{stream} delivered as {writes!r}"
