"""``CallerViewer``: the signed-in caller as access by group sees them (``groups.access.Viewer``), read
once per request (an admin's groups are not read at all)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from agentloft.auth.dependencies import CurrentUser
from agentloft.groups import access


async def _viewer(request: Request, user: CurrentUser) -> access.Viewer:
    return await access.viewer_of(request.app.state.db, user_id=user.id, role=user.role)


CallerViewer = Annotated[access.Viewer, Depends(_viewer)]
