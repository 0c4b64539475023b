"""Request dependencies of the tool domain."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from agentloft.core.dependencies import Rt
from agentloft.tools.registry import ToolRegistry


async def _registry(rt: Rt) -> ToolRegistry:
    return rt.registry


Registry = Annotated[ToolRegistry, Depends(_registry)]
