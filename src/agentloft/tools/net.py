"""The network guard (``core.netguard``) as a tool uses it: with its run's allow-list, and a refusal as
a failed result.

The guard itself takes the allow-list from its caller and knows nothing of tools; what only a tool has is
here: the ``ToolContext`` whose runtime reads the admin's setting and whose caller may pass more hosts down
(``ctx.extra["allowed_internal_hosts"]``), and the ``ToolResult`` a refused request becomes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from agentloft.core.netguard import AllowList, Blocked, GuardedResponse, NetError, request
from agentloft.tools.base import ToolContext, ToolResult


async def allow_list_for(ctx: ToolContext, extra: Iterable[str] = ()) -> AllowList:
    """The admin's ``allowed_internal_hosts`` setting, plus what the caller passes down in
    ``ctx.extra["allowed_internal_hosts"]`` and ``extra``."""
    from agentloft.system import service as system_service  # local: keeps the tool types light to import

    entries = [*await system_service.allowed_internal_hosts(rt=ctx.runtime),
               *ctx.extra.get("allowed_internal_hosts", ()), *extra]
    return AllowList.parse(entries)


async def guarded_request(ctx: ToolContext, method: str, url: str, **kw: Any) -> GuardedResponse:
    """:func:`core.netguard.request` with the allow-list of the tool's runtime."""
    return await request(method, url, allow=await allow_list_for(ctx), **kw)


def failure(exc: NetError) -> ToolResult:
    """A refused or failed request as the tool's failed result."""
    return ToolResult.fail(str(exc), blocked=True) if isinstance(exc, Blocked) else ToolResult.fail(str(exc))
