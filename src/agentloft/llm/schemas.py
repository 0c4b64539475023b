"""Request and response bodies of the model API: configurations (the API key write-only), presets for
the setup page, the connection test, and the setup status a new instance starts from.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AnyHttpUrl, Field, StrictBool, StringConstraints, field_validator

from agentloft.core.schemas import ApiModel
from agentloft.groups.schemas import GROUP_IDS_DOC, GroupIds
from agentloft.llm.models import ModelKind, Provider

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
# USD per million tokens, as the provider's price list says; null (or omitted): unknown, and the cost of the
# model's runs is unknown too (``usage.service``)
Price = Annotated[float | None, Field(default=None, ge=0, le=1_000_000, allow_inf_nan=False, description=(
    "USD per million tokens; null: unknown (the usage reports then show no cost for it)."))]
ModelName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]


def _url(value: str | None) -> str | None:
    if value is None or value == "":
        return None
    AnyHttpUrl(value)  # raises on a malformed URL
    return value.rstrip("/")


class ModelConfigCreate(ApiModel):
    name: Name
    kind: ModelKind = Field(default="chat", description=(
        "chat: agents and chats run on it; embedding: knowledge search turns text into vectors with it "
        "(OpenAI-compatible /v1/embeddings only)."))
    provider: Provider
    base_url: str | None = Field(default=None, description="Endpoint; empty uses the provider's default.")
    model: ModelName
    api_key: str | None = Field(default=None, description="Stored encrypted; never returned.")
    enabled: StrictBool = True
    is_default: StrictBool = False
    vision: StrictBool | None = Field(default=None, description=(
        "It reads images attached to chat messages; omitted: on for Anthropic and OpenAI's own API, off for "
        "other OpenAI-compatible servers (Ollama, vLLM, a custom one)."))
    input_price_per_m_tok: Price = None
    output_price_per_m_tok: Price = None
    group_ids: GroupIds = Field(default_factory=list, description=GROUP_IDS_DOC)

    _check_url = field_validator("base_url")(_url)


class ModelConfigUpdate(ApiModel):
    name: Name | None = None
    kind: ModelKind | None = None
    provider: Provider | None = None
    base_url: str | None = None
    model: ModelName | None = None
    api_key: str | None = Field(default=None, description="A new key; an empty string removes the key.")
    enabled: StrictBool | None = None
    is_default: StrictBool | None = None
    vision: StrictBool | None = None
    input_price_per_m_tok: Price = None
    output_price_per_m_tok: Price = None
    group_ids: GroupIds | None = Field(default=None, description=GROUP_IDS_DOC)

    _check_url = field_validator("base_url")(_url)


class ModelConfigRead(ApiModel):
    id: int
    name: str
    kind: ModelKind
    provider: Provider
    base_url: str | None
    model: str
    has_api_key: bool
    enabled: bool
    is_default: bool
    vision: bool = Field(description="It reads images attached to chat messages.")
    input_price_per_m_tok: float | None = Field(default=None, description="USD per million input tokens.")
    output_price_per_m_tok: float | None = Field(default=None, description="USD per million output tokens.")
    group_ids: list[int] = Field(default_factory=list, description=GROUP_IDS_DOC)
    created_at: datetime
    updated_at: datetime


class ModelTestResult(ApiModel):
    ok: bool
    latency_ms: int
    reply: str | None = None
    dimensions: int | None = Field(default=None, description="An embedding model's vector length.")
    error: str | None = None


class ModelPreset(ApiModel):
    id: str
    label: str
    provider: Provider
    base_url: str | None
    needs_api_key: bool
    offers_api_key: bool = Field(default=False, description="The key field shows though none is needed.")
    model_hint: str
    embedding_hint: str | None = Field(default=None, description=(
        "An embedding model this provider serves, as a placeholder; null: it serves none (no /v1/embeddings)."))
    vision: bool = Field(default=False, description="A model of this preset reads images, unless the admin says not.")


class ModelTestOptions(ApiModel):
    """What to do with a model once its test has answered."""

    activate: StrictBool = Field(default=False, description=(
        "When the test passes, switch the model on and make it the default; when it fails, leave it as "
        "it is. The setup page saves a model switched off and asks for this, so a model that does not "
        "answer never becomes the one every chat uses."))


class SetupStatus(ApiModel):
    """Whether the instance can chat yet; drives the onboarding page and the users' notice."""

    has_model: bool
