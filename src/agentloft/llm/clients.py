"""The model clients every turn shares: one pooled HTTP client, and the pydantic-ai models and agents
built on it, kept while their configuration stays the same.

Building a model (provider, SDK client) costs about a millisecond and a pydantic-ai agent about half of
one; both hold configuration only (a run's state lives in the run), so they are built once per
configuration instead of once per turn.
"""

from __future__ import annotations

from typing import Any

import httpx
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import DeferredToolRequests
from pydantic_ai.models import Model

from agentloft.llm.lean_http import LeanTransport
from agentloft.llm.lean_openai import build_chat_model
from agentloft.llm.providers import ModelSpec

# A run ends with text, or with the tool calls that wait for approval.
OUTPUT_TYPES: list[Any] = [str, DeferredToolRequests]
MAX_MODELS = 64
MAX_AGENTS = 256


class ModelClients:
    def __init__(self, *, timeout_seconds: float) -> None:
        self.timeout_seconds = timeout_seconds
        self._http: httpx.AsyncClient | None = None
        self._models: dict[ModelSpec, Model] = {}
        self._agents: dict[tuple[int, str | None], tuple[Model, PydanticAgent[None, Any]]] = {}

    def http_client(self) -> httpx.AsyncClient:
        """One pooled client for every model call of the app (connections are reused across turns)."""
        if self._http is None or self._http.is_closed:
            timeout = httpx.Timeout(self.timeout_seconds, connect=10.0)
            limits = httpx.Limits(max_connections=200, max_keepalive_connections=50)
            transport = LeanTransport(httpx.AsyncHTTPTransport(limits=limits))
            self._http = httpx.AsyncClient(timeout=timeout, transport=transport)
        return self._http

    def model(self, spec: ModelSpec) -> Model:
        """The model for ``spec``, keyed by the whole spec, so a changed key or URL gets a fresh one."""
        model = self._models.get(spec)
        if model is None:
            if len(self._models) > MAX_MODELS:
                self._models.clear()
            model = self._models[spec] = build_chat_model(spec, http_client=self.http_client())
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
