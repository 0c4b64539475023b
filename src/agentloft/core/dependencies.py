"""The FastAPI dependencies every domain's routers share: the runtime, a request's database session and
paging. Kept apart from ``runtime``, ``db`` and ``schemas`` so that services, which import those, never
import the web framework."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import Depends, Query, Request
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.runtime import Runtime
from agentloft.core.schemas import PageParams


async def get_runtime(request: Request) -> Runtime:
    """``async`` on purpose, as every dependency here: FastAPI runs a plain ``def`` dependency on a worker
    thread, a thread hop per request for nothing."""
    runtime: Runtime = request.app.state.runtime  # set by the app's lifespan (``app``)
    return runtime


Rt = Annotated[Runtime, Depends(get_runtime)]


async def _db_session(request: Request) -> AsyncIterator[AsyncSession]:
    async with request.app.state.db.session() as session:
        yield session


# scope="function": commit before the response is sent, so a client never sees success for a write that
# then fails to commit (and reads right after a write see it).
DbSession = Annotated[AsyncSession, Depends(_db_session, scope="function")]


async def _page_params(
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 20,
) -> PageParams:
    return PageParams(page=page, page_size=page_size)


Paging = Annotated[PageParams, Depends(_page_params)]
