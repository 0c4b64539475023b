"""Build pydantic-ai models from stored configurations.

``openai`` covers every OpenAI-compatible endpoint (OpenAI, Ollama, vLLM, LM Studio, OpenRouter,
DeepSeek); local servers often run without a key, so a placeholder key is sent when none is set.
"""

from __future__ import annotations

from dataclasses import dataclass

import httpx
from pydantic_ai.models import Model
from pydantic_ai.models.anthropic import AnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider


@dataclass(frozen=True)
class ModelSpec:
    """What is needed to talk to a model, decrypted; lives only in memory."""

    provider: str
    model: str
    base_url: str | None
    api_key: str | None


def build_model(spec: ModelSpec, *, http_client: httpx.AsyncClient | None = None) -> Model:
    """The model for ``spec``. ``http_client`` serves OpenAI-compatible endpoints only: the anthropic SDK
    refuses any client but its own ``httpx2`` one, so Anthropic models keep the SDK's default client."""
    if spec.provider == "anthropic":
        return AnthropicModel(
            spec.model, provider=AnthropicProvider(api_key=spec.api_key or "", base_url=spec.base_url)
        )
    provider = OpenAIProvider(
        base_url=spec.base_url or "https://api.openai.com/v1",
        api_key=spec.api_key or "not-needed",
        http_client=http_client,
    )
    return OpenAIChatModel(spec.model, provider=provider)
