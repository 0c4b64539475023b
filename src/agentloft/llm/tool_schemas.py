"""Each tool's JSON Schema adapted to a provider once, not on every request.

Before every model request pydantic-ai passes each tool's schema through the provider profile's
transformer (``Model.customize_request_parameters``): a deep copy and a walk of the whole schema, ~0.5 ms
per tool here, so ~2 ms of every request of an agent with four tools, for schemas that change only when
an admin edits a tool. The run's tools hand pydantic-ai the same schema object on every turn (a
``RunTool`` keeps its schema, ``tools.loading`` keeps the ``RunTool``), so the adapted schema can be kept
per schema object: the same object (and strictness) gives the adaptation made the first time.

The adaptation itself is still pydantic-ai's: ``ToolSchemaCache.customize`` calls the model's own
``customize_request_parameters`` for a tool it has not seen. Callers treat the kept schemas as read-only,
as they treat the schemas they pass in.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.tools import ToolDefinition

MAX_KEPT = 1024  # schemas per model; a full cache starts over (an adaptation is cheap to make again)

Customize = Callable[[ModelRequestParameters], ModelRequestParameters]


class ToolSchemaCache:
    """Adapted schemas of one model, keyed by the identity of the schema passed in."""

    def __init__(self) -> None:
        # (id of the schema, strict) -> (that schema, kept alive so its id is not reused; the adapted tool)
        self._kept: dict[tuple[int, bool | None], tuple[dict[str, Any], ToolDefinition]] = {}

    def customize(self, customize: Customize, params: ModelRequestParameters) -> ModelRequestParameters:
        """``customize(params)`` (the model's own ``customize_request_parameters``), with the function
        tools' schemas adapted once each."""
        tools = params.function_tools
        if not tools:
            return customize(params)
        done = customize(replace(params, function_tools=[]))
        return replace(done, function_tools=[self._adapted(customize, tool) for tool in tools])

    def _adapted(self, customize: Customize, tool: ToolDefinition) -> ToolDefinition:
        schema = tool.parameters_json_schema
        key = (id(schema), tool.strict)
        hit = self._kept.get(key)
        if hit is None or hit[0] is not schema:
            adapted = customize(ModelRequestParameters(function_tools=[tool])).function_tools[0]
            if len(self._kept) >= MAX_KEPT:
                self._kept.clear()
            hit = self._kept[key] = (schema, adapted)
        adapted = hit[1]
        return replace(tool, parameters_json_schema=adapted.parameters_json_schema, strict=adapted.strict)
