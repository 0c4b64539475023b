"""The model clients every turn shares: one pooled ``httpx2`` client, and the pydantic-ai models and
agents built on it, kept while their configuration stays the same.

The HTTP client is pydantic-ai's own (what ``create_async_httpx2_client`` builds): the pool the OpenAI
and Anthropic SDKs use by default (1000 connections, 100 kept alive), its user agent, and no custom
transport, so the proxies users set in ``HTTP_PROXY`` / ``HTTPS_PROXY`` / ``ALL_PROXY`` and the hosts in
``NO_PROXY`` apply to every model call. One change: requests are sent from an empty context
(``ModelHttpClient``).

How long a model may keep quiet (``model_timeout_seconds``, "T"), on every request of a model built here
(``wait_settings``):

- until the first words (or tool call) of each step: T in all, counting connecting, the response's
  headers, its first chunk, and every retry of the provider's SDK with its backoff (pydantic-ai's
  ``first_event_timeout``);
- between two chunks once the reply streams: T without a byte (the read timeout of each attempt);
- connecting, each attempt: at most ``CONNECT_S`` (or T when that is shorter).

Retries happen in one layer only, the provider's SDK (the openai and anthropic clients retry a refused or
dropped connection, a 408/409/429 or a 5xx twice, waiting 0.5-8 s, or what ``Retry-After`` says): they
still help a model that fails fast, but within the same budget, so they no longer stack on a timeout
(three attempts of T each plus the backoff made a silent model's chat wait 3 T and more). The HTTP client
retries nothing (no transport of its own), and pydantic-ai sends a model request again only as a new step
(a tool call it could not validate), which gets its own T.

Building a model (provider, SDK client) costs about a millisecond and a pydantic-ai agent about half of
one; both hold configuration only (a run's state lives in the run), so they are built once per
configuration instead of once per turn.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import TYPE_CHECKING, Any

import httpx2
from openai import AsyncOpenAI
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai import DeferredToolRequests
from pydantic_ai._http import DEFAULT_HTTP_LIMITS, ConnectPoolTimeoutCap
from pydantic_ai.models import Model, get_user_agent
from pydantic_ai.settings import ModelSettings

from agentloft.llm import embeddings
from agentloft.llm.providers import ModelSpec, build_model

if TYPE_CHECKING:
    from agentloft.core.tracing import SpanOptions

# A run ends with text, or with the tool calls that wait for approval.
OUTPUT_TYPES: list[Any] = [str, DeferredToolRequests]
MAX_MODELS = 64
MAX_AGENTS = 256
CONNECT_S = 10.0


class ModelHttpClient(httpx2.AsyncClient):
    """pydantic-ai's default client, sending every request from an empty context.

    The event loop keeps the context a connection was opened in for as long as the connection lives,
    and pydantic-ai makes its model requests in a context that holds the run (``RunContext``: the
    conversation, the tools, the run's state). Every connection kept in the pool kept the run that
    opened it; after a burst of 200 chats, 40-180 runs stayed in memory for good. The one task per
    request this costs is ~20 us.

    Built as ``pydantic_ai.models.create_async_httpx2_client`` builds its client (its pool limits and
    timeout hook come from ``pydantic_ai._http``, pinned with pydantic-ai; ``tests/llm/test_providers.py``
    checks that the two stay alike)."""

    def __init__(self, *, timeout: httpx2.Timeout) -> None:
        super().__init__(
            timeout=timeout, limits=DEFAULT_HTTP_LIMITS, headers={"User-Agent": get_user_agent()},
            event_hooks={"request": [ConnectPoolTimeoutCap(connect=timeout.connect, pool=timeout.pool)]},
        )

    async def send(self, request: httpx2.Request, **options: Any) -> httpx2.Response:
        """``AsyncClient.send`` (``stream``, ``auth``, ``follow_redirects`` pass through) in its own task
        with an empty context; cancelling the caller cancels it."""
        return await asyncio.create_task(super().send(request, **options), context=contextvars.Context())


def wait_settings(timeout_s: float) -> ModelSettings:
    """The waits of the module's doc, for a model whose every quiet spell may last ``timeout_s``."""
    return ModelSettings(timeout=timeout_s, first_event_timeout=timeout_s)


class ModelClients:
    def __init__(self, *, timeout_seconds: float, instrument: SpanOptions | None = None) -> None:
        """``instrument``: what the spans of model calls need (``core.tracing``), None while traces are
        off; with it, every model is wrapped in ``llm.traced.TracedModel``."""
        self.timeout_seconds = timeout_seconds
        self.instrument = instrument
        self._http: httpx2.AsyncClient | None = None
        self._models: dict[ModelSpec, Model] = {}
        self._agents: dict[tuple[int, str | None], tuple[Model, PydanticAgent[None, Any]]] = {}
        self._embedders: dict[ModelSpec, AsyncOpenAI] = {}

    def http_client(self) -> httpx2.AsyncClient:
        """One pooled client for every model call of the app (connections are reused across turns)."""
        if self._http is None or self._http.is_closed:
            timeout = httpx2.Timeout(self.timeout_seconds, connect=CONNECT_S, pool=CONNECT_S)
            self._http = ModelHttpClient(timeout=timeout)
        return self._http

    def model(self, spec: ModelSpec) -> Model:
        """The model for ``spec``, keyed by the whole spec, so a changed key or URL gets a fresh one.
        Raises ``ModelSetupError`` (or the SDK's error) when the configuration cannot make a model. With
        traces on, the model comes wrapped so each request is a span (``llm.traced``); off, it is the
        provider's model itself."""
        model = self._models.get(spec)
        if model is None:
            if len(self._models) > MAX_MODELS:
                self._models.clear()
            model = build_model(spec, http_client=self.http_client(), settings=wait_settings(self.timeout_seconds))
            if self.instrument is not None:
                from agentloft.llm.traced import TracedModel

                model = TracedModel(model, self.instrument)
            self._models[spec] = model
        return model

    def embedder(self, spec: ModelSpec) -> AsyncOpenAI:
        """The SDK client of an embedding model (``llm.embeddings``), kept like ``model``'s."""
        client = self._embedders.get(spec)
        if client is None:
            if len(self._embedders) > MAX_MODELS:
                self._embedders.clear()
            client = self._embedders[spec] = embeddings.build_client(spec, http_client=self.http_client())
        return client

    async def embed(self, spec: ModelSpec, texts: list[str], *, timeout_s: float | None = None) -> list[list[float]]:
        """One vector per text from the embedding model ``spec``, each batch waiting at most ``timeout_s``
        (default: the model timeout); raises as ``llm.embeddings`` says."""
        return (await self.embed_counted(spec, texts, timeout_s=timeout_s))[0]

    async def embed_counted(self, spec: ModelSpec, texts: list[str], *,
                            timeout_s: float | None = None) -> tuple[list[list[float]], int]:
        """``embed``'s vectors and the input tokens they cost (``llm.embeddings.embed_counted``)."""
        return await embeddings.embed_counted(self.embedder(spec), spec.model, texts,
                                              timeout_s=timeout_s or self.timeout_seconds)

    def agent(self, model: Model, instructions: str | None) -> PydanticAgent[None, Any]:
        """One pydantic-ai agent per model and instructions serves every turn."""
        key = (id(model), instructions)
        hit = self._agents.get(key)
        if hit is not None and hit[0] is model:  # the model itself is kept, so its id cannot be reused
            return hit[1]
        if len(self._agents) > MAX_AGENTS:
            self._agents.clear()
        # Not instrumented (pydantic-ai's default): the model's spans come from its wrapper (``model``),
        # the turn's from ``chat.engine``, so pydantic-ai's agent-run span would only repeat them.
        agent: PydanticAgent[None, Any] = PydanticAgent(model, instructions=instructions, output_type=OUTPUT_TYPES)
        agent.instrument = False  # also if something calls ``Agent.instrument_all()``
        self._agents[key] = (model, agent)
        return agent

    async def aclose(self) -> None:
        self._models.clear()
        self._agents.clear()
        self._embedders.clear()
        if self._http is not None:
            await self._http.aclose()
            self._http = None
