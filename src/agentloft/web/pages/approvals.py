"""``/approvals``: the Approvals inbox, the pending tool calls the signed-in user may decide for someone
else (``chat.approvals``: a tool's approver groups), rendered on the server; Approve and Reject go
through the chat's own ``POST /api/agent-sessions/{id}/approvals`` from ``static/js/pages/approvals.js``,
which then shows the inbox again (this page, fetched anew) so an item answered elsewhere goes too.

Decisions the issue leaves open:
- Each item shows what the approver needs and no more than the API gives them: the tool and its input,
  the agent, who asked and when, the chat's title, the question that led to the call and what the reply
  said before it (cut at ``CONTEXT_SHOWN`` characters, the rest behind "Show all"). The chat itself stays
  the requester's: there is no link into it.
- One reason field serves both answers (the API keeps a reason for either); it is optional for both.
- Oldest first, as the API lists them: the call waiting longest is the one to answer first.
- The top bar's entry is for approvers only (``chat.approvals.inbox_nav`` says why); the page itself
  answers anyone signed in, with the empty state, so a link sent to a former approver still opens.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from fastapi import Query, Request, Response

from agentloft.chat import approvals
from agentloft.chat import service as chat_service
from agentloft.core.dependencies import DbSession
from agentloft.core.schemas import PageParams
from agentloft.groups import access
from agentloft.groups import approvers as approver_groups
from agentloft.web.deps import PageUser, page_router
from agentloft.web.templating import render_page

router = page_router()

PAGE_SIZE = 20
CONTEXT_SHOWN = 300  # characters of the question and of the reply shown before "Show all"


@dataclass(frozen=True)
class Excerpt:
    """A text of the item's context: its start as shown, and the whole when that was cut."""

    start: str
    whole: str | None


@dataclass(frozen=True)
class ItemView:
    item: approvals.InboxItem
    agent: str | None
    groups: list[str]
    input_json: str
    question: Excerpt | None
    reply: Excerpt | None


def excerpt(text: str | None) -> Excerpt | None:
    """``text`` cut to ``CONTEXT_SHOWN`` characters (with an ellipsis), keeping the whole when cut."""
    if not text:
        return None
    if len(text) <= CONTEXT_SHOWN:
        return Excerpt(text, None)
    return Excerpt(text[: CONTEXT_SHOWN - 1].rstrip() + "…", text)


def _view(item: approvals.InboxItem, agents: dict[int, tuple[str, str]], groups: dict[int, str]) -> ItemView:
    agent_id = item.session.agent_id
    return ItemView(
        item=item, agent=agents[agent_id][1] if agent_id in agents else None,
        groups=[groups[g] for g in item.approver_ids if g in groups],
        input_json=json.dumps(item.approval.input, ensure_ascii=False, indent=2, default=str),
        question=excerpt(item.user_message), reply=excerpt(item.assistant_text))


@router.get("/approvals")
async def approvals_page(
    request: Request, user: PageUser, db: DbSession, page: int = Query(default=1, ge=1, le=100_000),
) -> Response:
    """One page of the caller's inbox (see the module docstring)."""
    viewer = await access.viewer_of(request.app.state.db, user_id=user.id, role=user.role)
    items, total = await approvals.inbox(db=db, user_id=user.id, viewer=viewer,
                                         page=PageParams(page=page, page_size=PAGE_SIZE))
    agents = await chat_service.agent_names(db=db, agent_ids=[i.session.agent_id for i in items])
    groups = await approver_groups.group_names(db=db, group_ids=[g for i in items for g in i.approver_ids])
    return render_page(
        request, "approvals.html", items=[_view(i, agents, groups) for i in items], total=total, page=page,
        pages=max(1, math.ceil(total / PAGE_SIZE)),
    )
