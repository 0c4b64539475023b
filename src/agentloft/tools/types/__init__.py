"""The built-in tool types. The app registers them at start-up through the same call an add-on uses."""

from __future__ import annotations

import importlib

from agentloft.tools.base import ToolType

# One module per type; each exposes ``TOOL_TYPE`` (an instance of its ToolType subclass).
BUILTIN_MODULES = (
    "calculator",
    "datetime_tool",
    "fetch",
    "web_search",
    "http_api",
    "webhook",
    "python_exec",
    "sql_query",
    "json_query",
    "text",
    "unit_convert",
    "random_tool",
    "rss",
    "document",
    "knowledge",
)


def builtin_types() -> list[ToolType]:
    """Every built-in type; a missing module is an error, not a silently smaller tool list."""
    return [importlib.import_module(f"{__name__}.{name}").TOOL_TYPE for name in BUILTIN_MODULES]
