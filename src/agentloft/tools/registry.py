"""The registry of tool types: slug → ``ToolType`` instance.

Built-in types and add-ons go through the same ``register`` call, so the platform never knows a type by
name. A slug registered twice is a programming error that must stop the app at start-up, not a silent
override that changes which code a stored tool runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentloft.tools.base import ToolType

# Where start-up keeps the registry on the runtime.


class DuplicateToolType(RuntimeError):
    """Two tool types claim the same slug."""


class IncompleteToolType(RuntimeError):
    """A tool type lacks what the platform needs to show or run it (slug, name, models...)."""


_REQUIRED = ("slug", "name", "description", "Config", "Input")


def _check(tool_type: ToolType[Any, Any]) -> None:
    missing = [attr for attr in _REQUIRED if not getattr(tool_type, attr, None)]
    if missing:
        raise IncompleteToolType(f"tool type {tool_type!r} lacks {', '.join(missing)}")


class ToolRegistry:
    """Holds the tool types one app knows. Lookups return ``None`` for an unknown slug; the caller decides
    whether that is a 422 (admin input), a skipped row (a removed add-on) or an error."""

    def __init__(self) -> None:
        self._types: dict[str, ToolType[Any, Any]] = {}

    def register(self, tool_type: ToolType[Any, Any]) -> ToolType[Any, Any]:
        _check(tool_type)
        existing = self._types.get(tool_type.slug)
        if existing is not None:
            raise DuplicateToolType(
                f"tool type slug '{tool_type.slug}' is registered twice "
                f"({type(existing).__module__}.{type(existing).__name__} and "
                f"{type(tool_type).__module__}.{type(tool_type).__name__})"
            )
        self._types[tool_type.slug] = tool_type
        return tool_type

    def register_all(self, tool_types: Iterable[ToolType[Any, Any]]) -> None:
        for tool_type in tool_types:
            self.register(tool_type)

    def get(self, slug: str) -> ToolType[Any, Any] | None:
        return self._types.get(slug)

    def all(self) -> list[ToolType[Any, Any]]:
        """Every type, sorted by slug so listings are stable."""
        return [self._types[slug] for slug in sorted(self._types)]

    def __contains__(self, slug: object) -> bool:
        return slug in self._types

    def __len__(self) -> int:
        return len(self._types)


