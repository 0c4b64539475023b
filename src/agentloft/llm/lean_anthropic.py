"""pydantic-ai's Anthropic model, adapting each tool's schema to the profile once (``llm.tool_schemas``).

A module of its own so that the anthropic SDK (~40 MB of types) is imported only when an Anthropic model
is built (``llm.providers``)."""

from __future__ import annotations

from functools import cached_property

from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.anthropic import AnthropicModel

from agentloft.llm.tool_schemas import ToolSchemaCache


class LeanAnthropicModel(AnthropicModel):
    @cached_property
    def _tool_schemas(self) -> ToolSchemaCache:
        return ToolSchemaCache()

    def customize_request_parameters(self, model_request_parameters: ModelRequestParameters) -> ModelRequestParameters:
        return self._tool_schemas.customize(super().customize_request_parameters, model_request_parameters)
