"""What every built-in type owes the platform: a unique slug, a config that works with defaults alone,
described input fields (the model reads them), and bad input turned into a failed result by the wrapper."""

from __future__ import annotations

import importlib

import pytest

from agentloft.tools.base import ToolType
from agentloft.tools.types import BUILTIN_MODULES
from tests.tools.types.conftest import Run

# every built-in type but the document type (tested on its own), and the type the A2A domain registers
MINE = [f"agentloft.tools.types.{m}" for m in BUILTIN_MODULES if m != "document"] + ["agentloft.a2a.tool"]
SLUGS = {
    "calculator": "calculator", "datetime_tool": "datetime", "fetch": "fetch", "web_search": "web-search",
    "http_api": "http-api", "webhook": "webhook", "python_exec": "python", "sql_query": "sql-query",
    "json_query": "json-query", "text": "text", "unit_convert": "unit-convert", "random_tool": "random",
    "rss": "rss", "knowledge": "knowledge", "tool": "agent-invoke",
}


def tool_type(module: str) -> ToolType:
    return importlib.import_module(module).TOOL_TYPE


@pytest.mark.parametrize("module", MINE)
def test_type_is_complete(module: str) -> None:
    t = tool_type(module)
    assert t.slug == SLUGS[module.rsplit('.', 1)[1]]
    assert t.name and t.description
    config = t.Config()  # defaults for everything
    assert t.describe(config).strip()
    for name, field in t.Config.model_fields.items():
        assert field.description, f"{t.slug}: config field {name} has no description"
    for name, field in t.Input.model_fields.items():
        assert field.description, f"{t.slug}: input field {name} has no description"
    schema = t.Input.model_json_schema()
    assert schema["type"] == "object" and schema["properties"]
    for secret in t.secret_fields:
        assert secret in t.Config.model_fields
        assert t.Config.model_json_schema()["properties"][t.Config.model_fields[secret].alias]["writeOnly"] is True


def test_slugs_are_unique() -> None:
    slugs = [tool_type(m).slug for m in MINE]
    assert len(set(slugs)) == len(slugs) == 15


@pytest.mark.parametrize("module", [m for m in MINE if tool_type(m).Input.model_json_schema().get("required")])
async def test_missing_input_is_a_failed_result_with_the_message(run: Run, module: str) -> None:
    t = tool_type(module)
    result = await run(t, {})
    assert not result.success
    assert result.error.startswith("invalid input: ")
    assert "Field required" in result.error
    assert "durationMs" in result.metadata


@pytest.mark.parametrize("module", MINE)
async def test_unknown_input_keys_are_refused(run: Run, module: str) -> None:
    result = await run(tool_type(module), {"noSuchField": 1})
    assert not result.success
    assert "noSuchField: Extra inputs are not permitted" in result.error


def test_python_defaults_to_admin_only_with_approval() -> None:
    t = tool_type("agentloft.tools.types.python_exec")
    assert t.default_admin_only is True and t.default_needs_approval is True


def test_builtin_types_lists_every_module() -> None:
    from agentloft.tools.types import builtin_types

    slugs = [t.slug for t in builtin_types()]
    assert len(slugs) == len(BUILTIN_MODULES) == len(set(slugs))
    assert set(SLUGS.values()) - {"agent-invoke"} <= set(slugs)
