"""``/agent-documents`` (tabs memory/documents, search, pages, newest first) and
``/agent-documents/{id}`` (rendered markdown, editor with preview, save, delete, versions with restore).

Pages read through ``documents.service`` with the signed-in user's id, so isolation is the service's
rule here too: another user's document is the same 404 page as a missing one. Writes go through the
JSON API from ``static/documents*.js``.
"""

from __future__ import annotations

import math
from typing import Literal

from fastapi import Query, Request, Response
from markupsafe import Markup

from agentloft.core.dependencies import DbSession
from agentloft.documents import service as documents_service
from agentloft.web.deps import PageUser, page_router
from agentloft.web.render_pool import Renderer
from agentloft.web.templating import render_page

router = page_router()

PAGE_SIZE = 20
VERSIONS_SHOWN = 50


@router.get("/agent-documents")
async def documents_page(
    request: Request,
    user: PageUser,
    db: DbSession,
    type: Literal["memory", "document"] = "memory",
    q: str = Query(default="", max_length=200),
    page: int = Query(default=1, ge=1, le=100_000),
) -> Response:
    found = await documents_service.list_documents(
        db=db, user_id=user.id, type=type, q=q.strip() or None, page=page, page_size=PAGE_SIZE
    )
    return render_page(
        request,
        "documents/list.html",
        doc_type=type,
        q=q.strip(),
        found=found,
        pages=max(1, math.ceil(found.total / PAGE_SIZE)),
    )


def _written_summary(summary: str | None, content: str) -> bool:
    """Whether the summary says something of its own (not just the start of the content, cut)."""
    if not summary:
        return False
    return not " ".join(content.split()).startswith(summary.rstrip("…").rstrip())


@router.get("/agent-documents/{document_id}")
async def document_page(
    request: Request, user: PageUser, db: DbSession, renderer: Renderer, document_id: str
) -> Response:
    doc = await documents_service.get_document_by_id(db=db, user_id=user.id, document_id=document_id)
    versions, total_versions = await documents_service.list_versions(
        db=db, user_id=user.id, document_id=document_id, limit=VERSIONS_SHOWN
    )
    return render_page(
        request,
        "documents/detail.html",
        doc=doc,
        # safe: markdown-it (html off), then the nh3 allow-list, in a render worker (never on the loop)
        html=Markup(await renderer.render(doc.content)),
        show_summary=_written_summary(doc.summary, doc.content),
        versions=versions,
        total_versions=total_versions,
        editable={"title": doc.title, "type": doc.type, "tags": doc.tags or "", "summary": doc.summary or "",
                  "content": doc.content},
    )
