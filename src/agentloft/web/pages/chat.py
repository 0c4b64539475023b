"""``/chat`` and ``/chat/{sessionId}``: the chat client. The agent list is rendered here; messages,
streams, approvals and stopping go through the chat API from ``static/js/chat/``."""

from __future__ import annotations

from fastapi import Request, Response
from fastapi.responses import RedirectResponse

from agentloft.agents import service as agents_service
from agentloft.agents.models import Agent
from agentloft.auth.models import User
from agentloft.chat import service as chat_service
from agentloft.chat.attachments import MAX_ATTACHMENTS
from agentloft.chat.knowledge import MAX_COLLECTIONS
from agentloft.core.dependencies import DbSession, Rt
from agentloft.core.runtime import Runtime
from agentloft.core.schemas import PageParams
from agentloft.defaults import ASSISTANT, TOOL_TEXTS
from agentloft.groups import access
from agentloft.groups import approvers as approver_groups
from agentloft.llm import service as llm_service
from agentloft.tools import loading as tools_loading
from agentloft.tools.schemas import ToolInfo
from agentloft.web.deps import PageUser, page_router
from agentloft.web.i18n import Translator, translator
from agentloft.web.pages.setup import SETUP_PATH, no_model_notice
from agentloft.web.templating import STATIC_DIR, render_page, request_language

router = page_router()
EXTENSIONS_DIR = STATIC_DIR / "js" / "chat" / "extensions"


def extension_scripts() -> list[str]:
    """Chat extensions (e.g. the A2A side panel): every module in ``static/js/chat/extensions/``.

    Linked under the same versioned prefix as chat.js (``static_url``): they import ``../hooks.js`` by a
    relative path, so both reach one URL, one shared instance of the hook registry.
    """
    if not EXTENSIONS_DIR.is_dir():
        return []
    return [f"js/chat/extensions/{p.name}" for p in sorted(EXTENSIONS_DIR.glob("*.js"))]


def agent_description(agent: Agent, t: Translator) -> str:
    """The agent's description in the reader's language: the default Assistant's, while an admin has not
    changed it, is translated (its English text is stored); any other is the admin's own words."""
    if agent.slug == ASSISTANT.slug and agent.description == ASSISTANT.description:
        return t("agentDefault.assistant.description")
    return agent.description


def tool_name(tool: ToolInfo, t: Translator) -> str:
    """A tool's name as a card shows it: a default tool's, while an admin has not renamed it, translated
    (as ``js/tool-texts.js`` does on the admin pages; done here, the chat loads one module less)."""
    default = TOOL_TEXTS.get(tool.type)
    return t(f"toolDefault.{tool.type}.name") if default and tool.name == default[0] else tool.name


async def tool_approvers(db: DbSession, tools: list[ToolInfo]) -> dict[str, list[str]]:
    """The approver groups' names of the tools that have some, by slug: a call of theirs that pauses says
    at once who is to approve, before the page has read the session (whose ``pendingApprovals`` then say
    it as the server decides it, should an admin have changed the groups since this page loaded)."""
    by_tool = await approver_groups.approvers_of(db=db, tool_ids=[tool.id for tool in tools])
    names = await approver_groups.group_names(db=db, group_ids=[g for ids in by_tool.values() for g in ids])
    return {tool.slug: [names[g] for g in by_tool[tool.id] if g in names] for tool in tools if by_tool[tool.id]}


def _selected_agent(agents: list[Agent], asked: str | None) -> str:
    """The agent a new chat opens on: the one ``?agent=`` names when the reader may use it (empty: the
    plain model chat), else the default Assistant when it is enabled, else the first one. A slug the reader
    cannot use (unknown, disabled, or hidden from them) is treated as no parameter and never echoed into
    the page, so the page is the same whether such an agent exists or not."""
    slugs = [a.slug for a in agents]
    if asked is not None and (asked == "" or asked in slugs):
        return asked
    return "assistant" if "assistant" in slugs else (slugs[0] if slugs else "")


async def _chat(
    request: Request, db: DbSession, rt: Runtime, *, user: User, session_id: str | None, agent: str | None
) -> Response:
    # First run: without an enabled model nothing here could answer. Admins go to the setup page; everyone
    # else reads a notice instead of a chat that fails on the first message.
    if not await llm_service.has_enabled_model(db=db):
        return RedirectResponse(SETUP_PATH, status_code=303) if user.is_admin else no_model_notice(request)
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)
    agents, _ = await agents_service.list_agents(db=db, page=PageParams(page=1, page_size=100), enabled_only=True,
                                                 viewer=viewer)
    t = translator(request_language(request))
    tools = await tools_loading.get_enabled_tool_infos(db=db, user_role=user.role, registry=rt.registry,
                                                       group_ids=viewer.group_ids)
    return render_page(
        request,
        "chat/chat.html",
        agents=agents,
        # What a new chat shows of its agent, and the names tool cards show (a call names its tool's slug).
        agent_intros={a.slug: {"description": agent_description(a, t), "starterPrompts": a.starter_prompts}
                      for a in agents},
        tool_names={tool.slug: tool_name(tool, t) for tool in tools},
        tool_approvers=await tool_approvers(db, tools),
        session_id=session_id,
        extension_scripts=extension_scripts(),
        selected_agent=_selected_agent(agents, agent),
        file_max_bytes=rt.settings.file_max_bytes,
        max_attachments=MAX_ATTACHMENTS,
        max_collections=MAX_COLLECTIONS,
    )


@router.get("/chat")
async def chat_page(
    request: Request, user: PageUser, db: DbSession, rt: Rt, agent: str | None = None
) -> Response:
    return await _chat(request, db, rt, user=user, session_id=None, agent=agent)


@router.get("/chat/{session_id}")
async def chat_session_page(request: Request, user: PageUser, db: DbSession, rt: Rt, session_id: str) -> Response:
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)  # 404 if not own, or its agent hidden
    session = await chat_service.get_readable_session(db=db, session_id=session_id, user_id=user.id, viewer=viewer)
    return await _chat(request, db, rt, user=user, session_id=session.id, agent=None)
