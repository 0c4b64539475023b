"""A tool's schema is adapted to the provider's profile once per schema object, not on every request
(``llm.tool_schemas``), and the adaptation is pydantic-ai's own."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.profiles.openai import OpenAIJsonSchemaTransformer
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition

from agentloft.llm.lean_openai import LeanChatModel


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
