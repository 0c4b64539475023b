"""Request dependencies of the tool domain."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from agentloft.runtime import Rt
from agentloft.tools.registry import ToolRegistry, registry_of


async def _registry(rt: Rt) -> ToolRegistry:
    return registry_of(rt)


Registry = Annotated[ToolRegistry, Depends(_registry)]
