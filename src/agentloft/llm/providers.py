"""Build pydantic-ai models from stored configurations, on the app's shared ``httpx2`` client.

A configuration names one of two wire formats: ``openai`` (every OpenAI-compatible endpoint) or
``anthropic`` (the Messages API). The presets of the admin form map onto these two; what differs between
OpenAI-compatible services is told by the endpoint's host, and picks pydantic-ai's provider for it, whose
model profile carries the service's quirks:

- DeepSeek (``api.deepseek.com``): reasoning in ``reasoning_content``, sent back on tool-call turns;
  ``max_tokens`` instead of ``max_completion_tokens``, which it ignores;
- Ollama (port 11434 or a host named ``ollama``): reasoning in ``reasoning``, no strict tool schemas,
  leading whitespace of some models' replies dropped;
- OpenRouter (``openrouter.ai``): ``vendor/model`` names get that vendor's profile;
- anything else (OpenAI, vLLM, LM Studio, …): pydantic-ai's OpenAI provider, as for OpenAI itself.

Local servers often run without a key, so a placeholder key is sent when none is set; Anthropic needs one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2
from openai import AsyncOpenAI
from pydantic_ai.models import Model
from pydantic_ai.providers import Provider
from pydantic_ai.providers.deepseek import DeepSeekProvider
from pydantic_ai.providers.ollama import OllamaProvider
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.providers.openrouter import OpenRouterProvider
from pydantic_ai.settings import ModelSettings

from agentloft.llm.lean_openai import LeanAsyncOpenAI, LeanChatModel

OPENAI_URL = "https://api.openai.com/v1"
OLLAMA_PORT = 11434


class ModelSetupError(ValueError):
    """A stored configuration from which no model can be built; the message is for the user."""


@dataclass(frozen=True)
class ModelSpec:
    """What is needed to talk to a model, decrypted; lives only in memory."""

    provider: str
    model: str
    base_url: str | None
    api_key: str | None


def build_model(spec: ModelSpec, *, http_client: httpx2.AsyncClient, settings: ModelSettings | None = None) -> Model:
    """The pydantic-ai model for ``spec``; its SDK client sends through ``http_client``. ``settings`` apply
    to every request of the model (a request's own settings go over them)."""
    if spec.provider == "anthropic":
        return _anthropic(spec, http_client, settings)
    if spec.provider == "openai":
        client = LeanAsyncOpenAI(base_url=spec.base_url or OPENAI_URL, api_key=spec.api_key or "not-needed",
                                 http_client=http_client)
        return LeanChatModel(spec.model, provider=openai_flavour(spec.base_url)(client), settings=settings)
    raise ModelSetupError(f"unknown provider {spec.provider!r}")


def _anthropic(spec: ModelSpec, http_client: httpx2.AsyncClient, settings: ModelSettings | None) -> Model:
    # Imported on first use: the anthropic SDK's types and their validators take ~40 MB, a fifth of the
    # process, which an instance that talks only to OpenAI-compatible models should not carry.
    from pydantic_ai.providers.anthropic import AnthropicProvider

    from agentloft.llm.lean_anthropic import LeanAnthropicModel

    if not spec.api_key:
        raise ModelSetupError("this Anthropic model has no API key; an administrator has to add one")
    base_url = spec.base_url
    if base_url is not None and base_url.rstrip("/").endswith("/v1"):
        base_url = base_url.rstrip("/")[:-3]  # the SDK adds ``/v1/messages`` itself
    provider = AnthropicProvider(api_key=spec.api_key, base_url=base_url or None, http_client=http_client)
    return LeanAnthropicModel(spec.model, provider=provider, settings=settings)


def openai_flavour(base_url: str | None) -> Callable[[AsyncOpenAI], Provider[AsyncOpenAI]]:
    """pydantic-ai's provider for the OpenAI-compatible service at ``base_url`` (see the module's doc)."""
    parts = urlsplit(base_url or OPENAI_URL)
    host = (parts.hostname or "").lower()
    if host == "deepseek.com" or host.endswith(".deepseek.com"):
        return lambda client: DeepSeekProvider(openai_client=client)
    if parts.port == OLLAMA_PORT or "ollama" in host:
        return lambda client: OllamaProvider(openai_client=client)
    if host == "openrouter.ai" or host.endswith(".openrouter.ai"):
        return lambda client: OpenRouterProvider(openai_client=client)
    return lambda client: OpenAIProvider(openai_client=client)
