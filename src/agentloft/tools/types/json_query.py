"""JSON query: a JMESPath expression over JSON the model passes in.

Models lose track in large JSON (an API response, a fetched document); JMESPath picks, filters and
reshapes it exactly (``people[?age > `30`].name``, ``sort_by(items, &price)[-1]``). JSON given as a
string is parsed first, since models often pass it that way.
"""

from __future__ import annotations

import json
from typing import Any

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType


class Config(ApiModel):
    max_input_chars: int = Field(
        default=2_000_000, ge=1_000, le=50_000_000, description="Largest JSON text accepted, in characters."
    )
    max_output_chars: int = Field(
        default=50_000, ge=100, le=5_000_000, description="Largest result handed back, in characters."
    )


class Input(ApiModel):
    expression: str = Field(
        min_length=1, max_length=5_000,
        description="JMESPath expression, e.g. 'items[?price > `10`].{name: name, price: price}' or 'length(users)'.",
    )
    data: Any = Field(description="The JSON document to query: an object or array (or a string holding JSON).")


class JsonQueryTool(ToolType[Config, Input]):
    slug = "json-query"
    name = "JSON query"
    description = "Selects, filters and reshapes JSON with JMESPath expressions."
    Config = Config
    Input = Input

    def describe(self, config: Config) -> str:
        return (
            "Query JSON with a JMESPath expression: select fields, filter arrays ([?cond]), project, sort, "
            "count (length), sum, max. Pass the JSON in `data` and the expression in `expression`."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        data = input.data
        if isinstance(data, str):
            if len(data) > config.max_input_chars:
                return ToolResult.fail(f"the JSON is too large (more than {config.max_input_chars} characters)")
            try:
                data = json.loads(data)
            except ValueError as exc:
                return ToolResult.fail(f"data is a string but not valid JSON: {exc}")
        try:
            result = jmespath.search(input.expression, data)
        except JMESPathError as exc:
            return ToolResult.fail(f"invalid JMESPath expression: {exc}")
        encoded = json.dumps(result, ensure_ascii=False, default=str)
        if len(encoded) > config.max_output_chars:
            return ToolResult.fail(
                f"the result is too large ({len(encoded)} characters; limit {config.max_output_chars}); "
                "narrow the expression"
            )
        return ToolResult.ok({"result": result})


TOOL_TYPE = JsonQueryTool()
