"""Start-up: register the built-in tool types through the add-on path."""

from __future__ import annotations

from agentloft.core.runtime import Runtime
from agentloft.tools.types import builtin_types


async def startup(rt: Runtime) -> None:
    """Register every built-in type. A duplicate slug raises here, so the app refuses to start rather
    than run the wrong code for a stored tool. Add-ons register theirs through ``rt.registry.register``,
    exactly like the built-ins do here."""
    rt.registry.register_all(builtin_types())
