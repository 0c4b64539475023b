"""Embeddings: texts to vectors through an OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI, Ollama,
vLLM, LM Studio, a company gateway…), for knowledge search and an embedding model's Test button.

Here, not in ``knowledge``, because ``llm`` owns everything that talks to a model provider: the request
goes through the ``openai`` SDK (its auth, request building and retries: twice on a refused connection,
a 408/409/429 or a 5xx) on the app's one pooled HTTP client (``ModelClients.http_client``), so proxies and
connection reuse are those of chat models.

How long a request may take: ``timeout_s`` in all for each batch, the SDK's retries and their backoff
included, as a chat step's first words (``llm.clients``); the knowledge code passes the model timeout
(``AGENTLOFT_MODEL_TIMEOUT_SECONDS``), the Test button its own short limit.

Failures are raised as pydantic-ai's model errors (``ModelHTTPError`` with the status and body,
``ModelAPIError`` for a connection that failed or timed out, ``UnexpectedModelBehavior`` for a reply that
is not one vector per text), so ``llm.failures`` words them exactly as it words a chat model's.

Vectors come back as the server sent them (lists of floats, ``encoding_format="float"``, which every
such server supports; base64 is not): normalising and storing them is the caller's business, and this
module needs no numpy (an instance without an embedding model never imports it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import httpx2
from openai import APIConnectionError, APIStatusError, AsyncOpenAI
from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior

from agentloft.llm.providers import OPENAI_URL, ModelSetupError, ModelSpec

BATCH_SIZE = 64
"""Texts per request: OpenAI takes up to 2,048 inputs, but local servers (Ollama, vLLM on a small GPU)
answer a big batch slowly and all at once; 64 chunks of ~1,000 characters is one modest request."""


def build_client(spec: ModelSpec, *, http_client: httpx2.AsyncClient) -> AsyncOpenAI:
    """The SDK client for an embedding model's endpoint, sending through ``http_client``."""
    if spec.provider != "openai":
        raise ModelSetupError("an embedding model must use an OpenAI-compatible endpoint")
    return AsyncOpenAI(base_url=spec.base_url or OPENAI_URL, api_key=spec.api_key or "not-needed",
                       http_client=http_client)


async def embed(client: AsyncOpenAI, model: str, texts: Sequence[str], *, timeout_s: float) -> list[list[float]]:
    """One vector per text, in order, ``BATCH_SIZE`` texts per request; raises as the module says."""
    return (await embed_counted(client, model, texts, timeout_s=timeout_s))[0]


async def embed_counted(client: AsyncOpenAI, model: str, texts: Sequence[str], *,
                        timeout_s: float) -> tuple[list[list[float]], int]:
    """``embed``'s vectors and the input tokens the server counted for them (0 when it says none), for the
    usage records (``usage.service``)."""
    vectors: list[list[float]] = []
    tokens = 0
    for start in range(0, len(texts), BATCH_SIZE):
        batch, counted = await _batch(client, model, list(texts[start:start + BATCH_SIZE]), timeout_s)
        vectors.extend(batch)
        tokens += counted
    return vectors, tokens


async def _batch(client: AsyncOpenAI, model: str, texts: list[str], timeout_s: float) -> tuple[list[list[float]], int]:
    try:
        async with asyncio.timeout(timeout_s):
            reply = await client.embeddings.create(model=model, input=texts, encoding_format="float",
                                                   timeout=timeout_s)
    except TimeoutError as exc:
        raise ModelAPIError(model, f"no answer within {timeout_s:g} s") from exc
    except APIStatusError as exc:
        raise ModelHTTPError(exc.status_code, model, exc.body) from exc
    except APIConnectionError as exc:
        raise ModelAPIError(model, exc.message) from exc
    usage = getattr(reply, "usage", None)
    return _vectors(reply.data, len(texts)), int(getattr(usage, "prompt_tokens", 0) or 0)


def _vectors(data: Sequence[object], expected: int) -> list[list[float]]:
    """The reply's vectors by their ``index``, checked: one per text, all of one length, not empty."""
    rows = sorted(data, key=lambda d: getattr(d, "index", 0))
    vectors = [getattr(d, "embedding", None) for d in rows]
    if len(vectors) != expected:
        raise UnexpectedModelBehavior(f"the embedding server sent {len(vectors)} vectors for {expected} texts")
    if not all(isinstance(v, list) and v for v in vectors):
        raise UnexpectedModelBehavior("the embedding server sent a vector that is not a list of numbers")
    checked: list[list[float]] = [v for v in vectors if isinstance(v, list)]
    if len({len(v) for v in checked}) > 1:
        raise UnexpectedModelBehavior("the embedding server sent vectors of different lengths")
    return checked
