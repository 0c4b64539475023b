"""Every provider the admin form offers is built with the installed SDKs and chats with a fake server of
its documented wire format.

The presets keep their real base URLs (``https://api.deepseek.com/v1``, ``http://127.0.0.1:11434/v1``, …),
so what picks the provider and its quirks is what a user gets; an ``httpx2`` transport that sends every
request to the local fake (keeping the path, recording the URL asked for) stands in for the internet.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ThinkingPart, ToolCallPart
from pydantic_ai.models import Model, ModelRequestParameters
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.settings import ModelSettings

from agentloft.llm.clients import CONNECT_S, ModelClients
from agentloft.llm.lean_openai import LeanAsyncOpenAI
from agentloft.llm.presets import PRESETS
from agentloft.llm.providers import ModelSetupError, ModelSpec, build_model
from tests.fakes.anthropic_server import FakeAnthropic, FakeAnthropicServer, Redacted, Reply, Text, Thinking, ToolUse
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, sse_body

# pydantic-ai's provider (named by ``Model.system``) each preset gets, and with it the service's quirks
SYSTEM_OF_PRESET = {
    "openai": "openai", "anthropic": "anthropic", "ollama": "ollama", "vllm": "openai", "lmstudio": "openai",
    "openrouter": "openrouter", "deepseek": "deepseek",
}


class Reroute(httpx2.AsyncBaseTransport):
    """Sends every request to ``target`` (scheme, host and port), keeping the path from ``/v1`` on."""

    def __init__(self, target: str) -> None:
        self.target = httpx2.URL(target)
        self.asked: list[str] = []
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        self.asked.append(str(request.url))
        path = request.url.path
        path = path[path.index("/v1/"):] if "/v1/" in path else "/v1" + path
        request.url = request.url.copy_with(scheme=self.target.scheme, host=self.target.host,
                                            port=self.target.port, path=path)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def test_every_preset_builds_its_provider_with_the_installed_sdks() -> None:
    client = httpx2.AsyncClient()
    for preset in PRESETS:
        spec = ModelSpec(preset.provider, preset.model_hint, preset.base_url, "sk-test")
        model = build_model(spec, http_client=client)
        assert model.system == SYSTEM_OF_PRESET[preset.id], preset.id
        if preset.provider == "openai":
            assert isinstance(model, OpenAIChatModel) and isinstance(model.client, LeanAsyncOpenAI)
        else:
            assert isinstance(model, AnthropicModel)


def test_an_anthropic_model_without_a_key_says_so() -> None:
    with pytest.raises(ModelSetupError, match="no API key"):
        build_model(ModelSpec("anthropic", "claude", None, None), http_client=httpx2.AsyncClient())


def _openai_body(*deltas: dict[str, Any], **kw: Any) -> bytes:
    return sse_body({"role": "assistant", "content": ""}, *deltas, **kw)


def _tool_deltas(call_id: str, name: str, args: dict[str, Any], pieces: int = 3) -> list[dict[str, Any]]:
    raw = json.dumps(args)
    size = -(-len(raw) // pieces)
    first = {"tool_calls": [{"index": 0, "id": call_id, "type": "function",
                             "function": {"name": name, "arguments": ""}}]}
    return [first] + [{"tool_calls": [{"index": 0, "function": {"arguments": raw[i:i + size]}}]}
                      for i in range(0, len(raw), size)]


def _think_tags(*pieces: str) -> list[dict[str, Any]]:
    return [{"content": p} for p in pieces]


@dataclass
class Case:
    preset: str
    model: str
    body: bytes | Reply
    parts: list[tuple[str, Any]]
    tokens: tuple[int, int]
    url: str  # the URL the SDK asked for


CASES = [
    Case("openai", "gpt-4o-mini",
         _openai_body({"content": "Let me "}, {"content": "check."},
                      *_tool_deltas("call_1", "get_weather", {"city": "Paris"}), finish="tool_calls",
                      usage=(21, 9)),
         [("text", "Let me check."), ("tool", ("get_weather", {"city": "Paris"}, "call_1"))], (21, 9),
         "https://api.openai.com/v1/chat/completions"),
    Case("deepseek", "deepseek-reasoner",
         _openai_body({"reasoning_content": "Two and "}, {"reasoning_content": "two."},
                      {"content": "It is "}, {"content": "4."}, usage=(12, 30)),
         [("thinking", "Two and two."), ("text", "It is 4.")], (12, 30),
         "https://api.deepseek.com/v1/chat/completions"),
    Case("ollama", "qwen3",
         _openai_body(*_think_tags("<think>", "\n", "Hmm, sum.", "\n", "</think>", "\n\n", "Four."),
                      usage=(8, 7)),
         [("thinking", "\nHmm, sum.\n"), ("text", "Four.")], (8, 7),
         "http://127.0.0.1:11434/v1/chat/completions"),
    Case("ollama", "gpt-oss:20b",
         _openai_body({"reasoning": "User wants "}, {"reasoning": "a number."}, {"content": "4"}, usage=(8, 3)),
         [("thinking", "User wants a number."), ("text", "4")], (8, 3),
         "http://127.0.0.1:11434/v1/chat/completions"),
    Case("vllm", "Qwen/QwQ-32B",
         _openai_body({"reasoning_content": "Adding."}, {"content": "4"}, usage=(5, 2)),
         [("thinking", "Adding."), ("text", "4")], (5, 2),
         "http://127.0.0.1:8001/v1/chat/completions"),
    Case("lmstudio", "qwen3-8b",
         _openai_body(*_think_tags("<think>", "Sum.", "</think>", "\n\n", "Four."), usage=(6, 4)),
         [("thinking", "Sum."), ("text", "\n\nFour.")], (6, 4),
         "http://127.0.0.1:1234/v1/chat/completions"),
    Case("openrouter", "openai/gpt-4o-mini",
         _openai_body({"reasoning": "Quick."}, {"content": "Four."}, usage=(9, 2)),
         [("thinking", "Quick."), ("text", "Four.")], (9, 2),
         "https://openrouter.ai/api/v1/chat/completions"),
    Case("anthropic", "claude-sonnet-4-5",
         Reply(blocks=[Thinking("Weather, so a tool.", signature="sig-1"), Redacted("EmwKAhgB"),
                       Text("Checking."), ToolUse("get_weather", {"city": "Paris"}, id="toolu_1", pieces=4)],
               input_tokens=40, output_tokens=25),
         [("thinking", "Weather, so a tool."), ("thinking", ""), ("text", "Checking."),
          ("tool", ("get_weather", {"city": "Paris"}, "toolu_1"))], (40, 25),
         "https://api.anthropic.com/v1/messages"),
]


def _parts(response: ModelResponse) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            out.append(("text", part.content))
        elif isinstance(part, ThinkingPart):
            out.append(("thinking", part.content))
        elif isinstance(part, ToolCallPart):
            out.append(("tool", (part.tool_name, part.args_as_dict(), part.tool_call_id)))
    return out


async def _streamed(model: Model, settings: ModelSettings | None = None) -> ModelResponse:
    """The response pydantic-ai builds from the model's stream."""
    async with model.request_stream([ModelRequest.user_text_prompt("hi")], settings,
                                    ModelRequestParameters()) as streamed:
        async for _ in streamed:
            pass
        return streamed.get()


@pytest.mark.parametrize("case", CASES, ids=[f"{c.preset}-{c.model}" for c in CASES])
async def test_every_preset_chats_in_its_wire_format(
    case: Case, fake_model: FakeModel, fake_model_server: FakeModelServer, fake_anthropic: FakeAnthropic,
    anthropic_server: FakeAnthropicServer,
) -> None:
    preset = next(p for p in PRESETS if p.id == case.preset)
    if isinstance(case.body, Reply):
        fake_anthropic.push(case.body)
        route = Reroute(anthropic_server.url)
    else:
        fake_model.push(Step(raw=case.body))
        route = Reroute(fake_model_server.url)
    client = httpx2.AsyncClient(transport=route)
    try:
        model = build_model(ModelSpec(preset.provider, case.model, preset.base_url, "sk-test"), http_client=client)
        response = await _streamed(model, ModelSettings(max_tokens=50))
        assert _parts(response) == case.parts
        assert (response.usage.input_tokens, response.usage.output_tokens) == case.tokens
    finally:
        await client.aclose()
    assert route.asked == [case.url]
    request = fake_anthropic.requests[-1] if isinstance(case.body, Reply) else fake_model.requests[-1]
    assert request["model"] == case.model and request["stream"] is True
    if case.preset == "deepseek":  # DeepSeek reads ``max_tokens`` and ignores ``max_completion_tokens``
        assert request["max_tokens"] == 50 and "max_completion_tokens" not in request


async def test_an_anthropic_model_builds_on_the_shared_clients() -> None:
    clients = ModelClients(timeout_seconds=5)
    try:
        model = clients.model(ModelSpec(provider="anthropic", model="claude-x", base_url=None, api_key="k"))
        assert isinstance(model, AnthropicModel)
        assert model.model_name == "claude-x"
    finally:
        await clients.aclose()


async def test_the_shared_client_is_pydantic_ais_default_client() -> None:
    """``ModelHttpClient`` is built from ``pydantic_ai._http``'s private pieces (pinned with pydantic-ai):
    this fails when ``create_async_httpx2_client`` starts building its client differently."""
    from pydantic_ai._http import DEFAULT_HTTP_LIMITS, ConnectPoolTimeoutCap
    from pydantic_ai.models import create_async_httpx2_client

    timeout = httpx2.Timeout(30, connect=CONNECT_S, pool=CONNECT_S)
    ours, theirs = ModelClients(timeout_seconds=30), create_async_httpx2_client(timeout=timeout)
    try:
        client = ours.http_client()
        assert create_async_httpx2_client.__kwdefaults__["limits"] is DEFAULT_HTTP_LIMITS
        assert client.timeout == theirs.timeout == timeout
        assert client.headers["User-Agent"] == theirs.headers["User-Agent"]
        assert client.trust_env and theirs.trust_env
        hooks = [(type(h), vars(h)) for h in client.event_hooks["request"]]
        assert hooks == [(type(h), vars(h)) for h in theirs.event_hooks["request"]]
        assert hooks[0][0] is ConnectPoolTimeoutCap and not client.event_hooks["response"]
    finally:
        await ours.aclose()
        await theirs.aclose()
