"""The model clients every turn shares: one pooled ``httpx2`` client, and the pydantic-ai models and
agents built on it, kept while their configuration stays the same.

The HTTP client is pydantic-ai's own (``create_async_httpx2_client``): the pool the OpenAI and Anthropic
SDKs use by default (1000 connections, 100 kept alive), its user agent, and no custom transport, so the
proxies users set in ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` and the hosts in ``NO_PROXY`` apply
to every model call. Reads wait ``model_timeout_seconds`` (the engine also passes it per request);
connecting and waiting for a pooled connection are capped at ``CONNECT_S``.

Building a model (provider, SDK client) costs about a millisecond and a pydantic-ai agent about half of
one; both hold configuration only (a run's state lives in the run), so they are built once per
configuration instead of once per turn.
"""

from __future__ import annotations

from typing import Any

import httpx2
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import DeferredToolRequests
from pydantic_ai.models import Model, create_async_httpx2_client

from agentloft.llm.providers import ModelSpec, build_model

# A run ends with text, or with the tool calls that wait for approval.
OUTPUT_TYPES: list[Any] = [str, DeferredToolRequests]
MAX_MODELS = 64
MAX_AGENTS = 256
CONNECT_S = 10.0


class ModelClients:
    def __init__(self, *, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._http: httpx2.AsyncClient | None = None
        self._models: dict[ModelSpec, Model] = {}
        self._agents: dict[tuple[int, str | None], tuple[Model, PydanticAgent[None, Any]]] = {}

    def http_client(self) -> httpx2.AsyncClient:
        """One pooled client for every model call of the app (connections are reused across turns)."""
        if self._http is None or self._http.is_closed:
            timeout = httpx2.Timeout(self.timeout_seconds, connect=CONNECT_S, pool=CONNECT_S)
            self._http = create_async_httpx2_client(timeout=timeout)
        return self._http

    def model(self, spec: ModelSpec) -> Model:
        """The model for ``spec``, keyed by the whole spec, so a changed key or URL gets a fresh one.
        Raises ``ModelSetupError`` (or the SDK's error) when the configuration cannot make a model."""
        model = self._models.get(spec)
        if model is None:
            if len(self._models) > MAX_MODELS:
                self._models.clear()
            model = self._models[spec] = build_model(spec, http_client=self.http_client())
        return model

    def agent(self, model: Model, instructions: str | None) -> PydanticAgent[None, Any]:
        """One pydantic-ai agent per model and instructions serves every turn."""
        key = (id(model), instructions)
        hit = self._agents.get(key)
        if hit is not None and hit[0] is model:  # the model itself is kept, so its id cannot be reused
            return hit[1]
        if len(self._agents) > MAX_AGENTS:
            self._agents.clear()
        agent: PydanticAgent[None, Any] = PydanticAgent(model, instructions=instructions, output_type=OUTPUT_TYPES)
        self._agents[key] = (model, agent)
        return agent

    async def aclose(self) -> None:
        self._models.clear()
        self._agents.clear()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
