"""Building the model a chat turn uses, for each provider, through the shared clients."""

from __future__ import annotations

from pydantic_ai.models.anthropic import AnthropicModel

from agentloft.llm.clients import ModelClients
from agentloft.llm.providers import ModelSpec


async def test_an_anthropic_model_builds_on_the_shared_clients() -> None:
    # The shared client is httpx; the anthropic SDK takes only its own httpx2 client and raised on it.
    clients = ModelClients(timeout_seconds=5)
    try:
        model = clients.model(ModelSpec(provider="anthropic", model="claude-x", base_url=None, api_key="k"))
        assert isinstance(model, AnthropicModel)
        assert model.model_name == "claude-x"
    finally:
        await clients.aclose()
