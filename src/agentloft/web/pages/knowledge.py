"""``/knowledge`` (the user's collections, newest first, and a "new collection" dialog) and
``/knowledge/{id}`` (its files with their state and chunk count, add by upload, remove, delete, search).

Pages read through ``knowledge.service`` with the signed-in user's id, so another user's collection is
the same 404 page as a missing one. Writes and searches go through the JSON API from
``static/js/pages/knowledge*.js``; the collection page polls its own API while a file is being indexed.
"""

from __future__ import annotations

import math

from fastapi import Query, Request, Response

from agentloft.core.dependencies import Rt
from agentloft.knowledge import service as knowledge_service
from agentloft.knowledge.schemas import CollectionDetail, CollectionFileRead
from agentloft.web.deps import PageUser, page_router
from agentloft.web.templating import render_page

router = page_router()

PAGE_SIZE = 20


@router.get("/knowledge")
async def knowledge_page(request: Request, user: PageUser, rt: Rt,
                         page: int = Query(default=1, ge=1, le=100_000)) -> Response:
    rows, total = await knowledge_service.list_collections(rt=rt, user_id=user.id, offset=(page - 1) * PAGE_SIZE,
                                                           limit=PAGE_SIZE)
    return render_page(request, "knowledge/list.html", collections=rows, total=total, page=page,
                       pages=max(1, math.ceil(total / PAGE_SIZE)))


@router.get("/knowledge/{collection_id}")
async def collection_page(request: Request, user: PageUser, rt: Rt, collection_id: str) -> Response:
    summary, files = await knowledge_service.get(rt=rt, user_id=user.id, collection_id=collection_id)
    detail = CollectionDetail.model_validate(
        {**summary.__dict__, "files": [CollectionFileRead.model_validate(f) for f in files]})
    return render_page(request, "knowledge/detail.html", collection=summary,
                       data=detail.model_dump(mode="json", by_alias=True))
