"""``/chat`` and ``/chat/{sessionId}``: the chat client. The agent list is rendered here; messages,
streams, approvals and stopping go through the chat API from ``static/js/chat/``."""

from __future__ import annotations

from fastapi import Request, Response

from agentloft.agents import service as agents_service
from agentloft.chat import service as chat_service
from agentloft.db import DbSession
from agentloft.schemas import PageParams
from agentloft.web.deps import PageUser, page_router
from agentloft.web.templating import STATIC_DIR, render_page

router = page_router()
EXTENSIONS_DIR = STATIC_DIR / "js" / "chat" / "extensions"


def extension_scripts() -> list[str]:
    """Chat extensions (e.g. the A2A side panel): every module in ``static/js/chat/extensions/``.

    Listed without a version query: they import ``../hooks.js`` by a plain path, and so does chat.js,
    which keeps one shared instance of the hook registry.
    """
    if not EXTENSIONS_DIR.is_dir():
        return []
    return [f"js/chat/extensions/{p.name}" for p in sorted(EXTENSIONS_DIR.glob("*.js"))]


async def _chat(request: Request, db: DbSession, *, session_id: str | None, agent: str | None) -> Response:
    agents, _ = await agents_service.list_agents(db=db, page=PageParams(page=1, page_size=100), enabled_only=True)
    return render_page(
        request,
        "chat/chat.html",
        agents=agents,
        session_id=session_id,
        # ``?agent=`` (empty) picks the plain model chat; no parameter picks the first agent.
        extension_scripts=extension_scripts(),
        selected_agent=agent if agent is not None else (agents[0].slug if agents else ""),
    )


@router.get("/chat")
async def chat_page(request: Request, _: PageUser, db: DbSession, agent: str | None = None) -> Response:
    return await _chat(request, db, session_id=None, agent=agent)


@router.get("/chat/{session_id}")
async def chat_session_page(request: Request, user: PageUser, db: DbSession, session_id: str) -> Response:
    session = await chat_service.get_session(db=db, session_id=session_id, user_id=user.id)  # 404 if not own
    return await _chat(request, db, session_id=session.id, agent=None)
