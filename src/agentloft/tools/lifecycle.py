"""Start-up: build the tool registry and register the built-in types through the add-on path."""

from __future__ import annotations

from agentloft.runtime import Runtime
from agentloft.tools.registry import REGISTRY_KEY, ToolRegistry
from agentloft.tools.types import builtin_types


async def startup(rt: Runtime) -> None:
    """Create the registry and register every built-in type. A duplicate slug raises here, so the app
    refuses to start rather than run the wrong code for a stored tool. Add-ons register later through
    ``rt.extras["tool_registry"].register(...)``, exactly like the built-ins do here."""
    registry = ToolRegistry()
    registry.register_all(builtin_types())
    rt.extras[REGISTRY_KEY] = registry
