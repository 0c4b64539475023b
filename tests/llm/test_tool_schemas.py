"""A tool's schema is adapted to the provider's profile once per schema object, not on every request
(``llm.tool_schemas``), and the adaptation is pydantic-ai's own."""

from __future__ import annotations

from typing import Any

import httpx2
import pytest
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition

from agentloft.llm.lean_openai import LeanChatModel
from agentloft.llm.providers import ModelSpec, build_model


def _model() -> LeanChatModel:
    return LeanChatModel("gpt-4o", provider=OpenAIProvider(api_key="k"))


def _tools(*schemas: dict[str, Any]) -> ModelRequestParameters:
    return ModelRequestParameters(function_tools=[
        ToolDefinition(name=f"t{i}", parameters_json_schema=s, strict=False) for i, s in enumerate(schemas)])


SCHEMA: dict[str, Any] = {
    "type": "object", "title": "Input",
    "properties": {"when": {"type": "string", "format": "date-time", "title": "When"},
                   "n": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None}},
}


def test_each_schema_is_walked_once_and_the_result_is_pydantic_ais(monkeypatch: pytest.MonkeyPatch) -> None:
    walks: list[int] = []
    walk = OpenAIJsonSchemaTransformer.walk

    def counted(self: OpenAIJsonSchemaTransformer) -> Any:
        walks.append(1)
        return walk(self)

    model = _model()
    plain = LeanChatModel.__mro__[1].customize_request_parameters(model, _tools(SCHEMA))  # pydantic-ai's alone
    monkeypatch.setattr(OpenAIJsonSchemaTransformer, "walk", counted)
    other = {"type": "object", "properties": {}}
    for _ in range(3):
        done = model.customize_request_parameters(_tools(SCHEMA, other))
    assert len(walks) == 2  # one per schema, not one per schema and request
    assert done.function_tools[0].parameters_json_schema == plain.function_tools[0].parameters_json_schema
    assert [t.name for t in done.function_tools] == ["t0", "t1"]
    assert done.function_tools[0].strict is False

    edited = {**SCHEMA, "properties": {"n": {"type": "integer"}}}  # a new row version: a new object
    model.customize_request_parameters(_tools(edited))
    assert len(walks) == 3


# Every flavour ``llm.providers`` builds, each with its own profile's transformer (OpenAI's, the inlining
# one of Ollama, DeepSeek's, OpenRouter's for Gemini, Anthropic's).
FLAVOURS = [
    ModelSpec("openai", "gpt-4o", None, "k"),
    ModelSpec("openai", "llama3.1", "http://localhost:11434/v1", None),
    ModelSpec("openai", "deepseek-chat", "https://api.deepseek.com", "k"),
    ModelSpec("openai", "google/gemini-2.5-pro", "https://openrouter.ai/api/v1", "k"),
    ModelSpec("openai", "anthropic/claude-sonnet-4.5", "https://openrouter.ai/api/v1", "k"),
    ModelSpec("anthropic", "claude-sonnet-4-5", None, "k"),
]

NESTED: dict[str, Any] = {
    "type": "object", "title": "Input", "additionalProperties": False,
    "$defs": {"Place": {"type": "object", "title": "Place",
                        "properties": {"city": {"type": "string"},
                                       "zip": {"anyOf": [{"type": "string"}, {"type": "null"}]}},
                        "required": ["city"]}},
    "properties": {"where": {"$ref": "#/$defs/Place"},
                   "stops": {"type": "array", "items": {"$ref": "#/$defs/Place"}, "maxItems": 5},
                   "when": {"type": "string", "format": "date-time", "description": "ISO 8601"},
                   "n": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None}},
    "required": ["where"],
}


@pytest.mark.parametrize("spec", FLAVOURS, ids=lambda s: f"{s.provider}:{s.model}")
async def test_every_provider_gets_its_own_adaptation_once_per_schema(
    spec: ModelSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """For each flavour: the tools sent are exactly what pydantic-ai's model alone makes of them (schema
    and strictness, for strict unset, on and off), and each schema is walked once however many requests
    carry it."""
    async with httpx2.AsyncClient() as http:
        model = build_model(spec, http_client=http)
        pydantic_ais = type(model).__mro__[1]
        assert pydantic_ais.__module__.startswith("pydantic_ai.")
        transformer = model.profile.get("json_schema_transformer")
        assert transformer is not None
        schemas = [NESTED, SCHEMA, {"type": "object", "properties": {}}]

        def params() -> ModelRequestParameters:
            return ModelRequestParameters(function_tools=[
                ToolDefinition(name=f"t{i}_{strict}", parameters_json_schema=s, strict=strict)
                for i, s in enumerate(schemas) for strict in (None, True, False)])

        plain = pydantic_ais.customize_request_parameters(model, params())
        walks: list[int] = []
        walk = transformer.walk

        def counted(self: Any) -> Any:
            walks.append(1)
            return walk(self)

        monkeypatch.setattr(transformer, "walk", counted)
        for _ in range(3):
            done = model.customize_request_parameters(params())
            assert [(t.name, t.parameters_json_schema, t.strict) for t in done.function_tools] == [
                (t.name, t.parameters_json_schema, t.strict) for t in plain.function_tools]
        assert len(walks) == len(schemas) * 3  # once per schema and strictness, not per request
