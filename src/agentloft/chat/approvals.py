"""Approvals by someone else: who may answer a paused tool call, and the Approvals inbox.

A tool may name approver groups (``groups.approvers``). Its calls pause exactly as any call that needs
approval (pending rows in ``chat_approvals``, answered through ``POST /api/agent-sessions/{id}/approvals``,
resumed on any worker), but who may answer differs:

- A call of a tool without approver groups is answered by its requester only, as before; anyone else is
  told the session does not exist (404 ``session_not_found``).
- A call of a tool with approver groups is answered by a member of one of them, or by any admin (admins
  set the approvers and see every tool; a user would expect an admin can step in when the approvers are
  away). Never by its requester, even one who is in the groups or an admin: a call approved by whoever
  asked for it is what approvers exist to prevent. The requester gets 403 ``approval_by_approvers``,
  naming the groups; anyone else 404 ``session_not_found``, exactly what a stranger gets for any session,
  so an outsider learns nothing.
- Hidden stays hidden: a non-admin member of an approver group decides (and sees in the inbox) only calls
  of tools they may see themselves: an admin-only tool's calls go to the admins alone, a tool limited to
  groups goes to the approvers who may use it (``groups.access``). To anyone else such a call is not there.
- The groups are the tool's approvers when the call is answered, not when it paused: an admin who changes
  them (someone left, a group was renamed) changes who decides the calls waiting now. A call whose tool was
  deleted is left to its requester, as a tool without approvers is.
- A call whose requester may no longer use the chat's agent (they left its groups) is not in the inbox:
  answering it is refused (the run would resume as the requester), and it comes back if they rejoin.

The run resumes as the requester (their session, their tools, their stream), whoever answered; the
approver's answer returns no stream, since the conversation stays the requester's: an approver sees only
what the inbox shows (the call, and the last user message and assistant text before it).
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import ColumnElement, Select, and_, false, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.auth.models import User
from agentloft.chat.models import AWAITING_APPROVAL, AgentMessage, AgentSession, ChatApproval
from agentloft.core.db import one_or_404
from agentloft.core.errors import Forbidden, NotFound
from agentloft.core.schemas import PageParams
from agentloft.groups import access, approvers
from agentloft.groups.models import ApproverGroup
from agentloft.tools.models import AgentTool

# How much of the last user message and of the assistant's text an inbox item carries: enough to decide.
CONTEXT_CHARS = 2000


class ApprovalByApprovers(Forbidden):
    """The requester tried to answer a call that its tool's approvers decide."""

    code = "approval_by_approvers"

    def __init__(self, groups: list[str]) -> None:
        super().__init__(f"this tool call waits for approval by the group(s) {', '.join(groups)}; "
                         "its requester may not answer it")


def session_not_found() -> NotFound:
    return NotFound("session not found", code="session_not_found")


async def _live_session(db: AsyncSession, session_id: str) -> AgentSession:
    stmt = select(AgentSession).where(AgentSession.id == session_id, AgentSession.deleted_at.is_(None))
    return await one_or_404(db, stmt, session_not_found())


async def _approval(db: AsyncSession, session_id: str, tool_call_id: str) -> ChatApproval | None:
    stmt = select(ChatApproval).where(ChatApproval.session_id == session_id, ChatApproval.tool_call_id == tool_call_id)
    return (await db.execute(stmt)).scalar_one_or_none()


async def _approver_ids(db: AsyncSession, tool_id: str | None) -> list[int]:
    return [] if tool_id is None else (await approvers.approvers_of(db=db, tool_ids=[tool_id]))[tool_id]


async def may_decide(db: AsyncSession, *, viewer: access.Viewer, tool_id: str | None) -> bool:
    """Whether ``viewer`` (not the requester) may answer a call of ``tool_id`` (see the module's rules)."""
    groups = await _approver_ids(db, tool_id)
    if not groups:
        return False
    tool = await db.get(AgentTool, tool_id)
    if tool is None:
        return False
    if viewer.sees_all:
        return True
    if tool.admin_only:
        return False
    limits = await access.load_limits(db=db, viewer=viewer)
    return limits.allows(viewer, "tool", tool.id) and not set(groups).isdisjoint(viewer.group_ids)


async def check_answer(db: AsyncSession, *, user: User, viewer: access.Viewer, session_id: str,
                       tool_call_id: str) -> AgentSession:
    """The session whose call ``user`` may answer, or the refusal the module's rules give. An unknown or
    answered call is left to ``service.answer_approval`` (404/409) for those who may see it."""
    session = await _live_session(db, session_id)
    row = await _approval(db, session_id, tool_call_id)
    if session.user_id == user.id:
        groups = await _approver_ids(db, row.tool_id if row else None)
        if groups:
            names = await approvers.group_names(db=db, group_ids=groups)
            raise ApprovalByApprovers([names[g] for g in groups if g in names])
        return session
    if row is None or not await may_decide(db, viewer=viewer, tool_id=row.tool_id):
        raise session_not_found()
    return session


# --- the inbox ---------------------------------------------------------------------------------------


@dataclass
class InboxItem:
    """One pending call the caller may decide, with what they need to decide it."""

    approval: ChatApproval
    session: AgentSession
    requester: str
    tool: AgentTool
    approver_ids: list[int]
    user_message: str | None = None
    assistant_text: str = ""


def _decidable(viewer: access.Viewer) -> ColumnElement[bool]:
    """The calls ``viewer`` may decide, as a SQL condition on the joined approval and tool."""
    named = select(ApproverGroup.tool_id).where(ApproverGroup.tool_id == AgentTool.id)
    if viewer.sees_all:
        return named.exists()
    if not viewer.group_ids:
        return false()
    mine = named.where(ApproverGroup.group_id.in_(sorted(viewer.group_ids))).exists()
    return and_(mine, AgentTool.admin_only == 0, access.allowed("tool", AgentTool.id, viewer))


def _inbox(user_id: int, viewer: access.Viewer) -> Select[ChatApproval, AgentSession, str, AgentTool]:
    return (
        select(ChatApproval, AgentSession, User.username, AgentTool)
        .join(AgentSession, AgentSession.id == ChatApproval.session_id)
        .join(User, User.id == AgentSession.user_id)
        .join(AgentTool, AgentTool.id == ChatApproval.tool_id)
        .where(ChatApproval.status == "pending", AgentSession.deleted_at.is_(None),
               AgentSession.status == AWAITING_APPROVAL, AgentSession.user_id != user_id, _decidable(viewer),
               access.allowed_to_owner("agent", AgentSession.agent_id, User.id, User.role))
    )


async def inbox(*, db: AsyncSession, user_id: int, viewer: access.Viewer,
                page: PageParams) -> tuple[list[InboxItem], int]:
    """The pending calls the caller may decide, oldest first, with their context."""
    base = _inbox(user_id, viewer)
    total = int((await db.execute(select(func.count()).select_from(base.subquery()))).scalar_one())
    stmt = base.order_by(ChatApproval.created_at, ChatApproval.id).offset(page.offset).limit(page.page_size)
    rows = (await db.execute(stmt)).all()
    groups = await approvers.approvers_of(db=db, tool_ids=sorted({tool.id for *_, tool in rows}))
    items = [InboxItem(approval=a, session=s, requester=name, tool=tool, approver_ids=groups[tool.id])
             for a, s, name, tool in rows]
    for item in items:
        await _add_context(db, item)
    return items, total


async def _add_context(db: AsyncSession, item: InboxItem) -> None:
    """The assistant's text before the call (its paused reply) and the user message that reply answers."""
    reply = await db.get(AgentMessage, item.approval.message_id)
    if reply is None:
        return
    item.assistant_text = reply.content[:CONTEXT_CHARS]
    stmt = (select(AgentMessage.content)
            .where(AgentMessage.session_id == reply.session_id, AgentMessage.role == "user",
                   AgentMessage.sort_order < reply.sort_order)
            .order_by(AgentMessage.sort_order.desc()).limit(1))
    question = (await db.execute(stmt)).scalar_one_or_none()
    item.user_message = question[:CONTEXT_CHARS] if question is not None else None


async def answerer_names(*, db: AsyncSession, approvals: list[ChatApproval], owner_id: int) -> dict[str, str]:
    """Who answered each call someone other than its requester answered, by tool call id (the chat shows
    it next to the answer)."""
    by = {a.tool_call_id: a.answered_by for a in approvals
          if a.answered_by is not None and a.answered_by != owner_id}
    if not by:
        return {}
    rows = await db.execute(select(User.id, User.username).where(User.id.in_(set(by.values()))))
    names = {uid: name for uid, name in rows.all()}
    return {call: names.get(uid, "") for call, uid in by.items() if uid is not None}


async def owner_role(db: AsyncSession, user_id: int) -> str:
    """The requester's role, for resuming their run when an approver answered."""
    return str((await db.execute(select(User.role).where(User.id == user_id))).scalar_one())


# --- the navigation's entry -----------------------------------------------------------------------------


@dataclass(frozen=True)
class InboxNav:
    """What the top bar shows of the inbox: the entry at all (``shown``) and its badge (``pending``)."""

    shown: bool
    pending: int


async def inbox_nav(*, db: AsyncSession, user_id: int, viewer: access.Viewer) -> InboxNav:
    """Whether the caller is an approver at all and, if so, how many calls wait for them.

    The entry is shown only to approvers (an admin once any tool names approvers; anyone else once a
    group of theirs approves some tool): most people never decide another's call, and an entry that is
    always empty teaches them to ignore the badge. Its count is the inbox's own, so the badge and the
    page never disagree. Someone who is no approver pays one small query per page; an approver two.
    """
    named = select(ApproverGroup.tool_id)
    if not viewer.sees_all:
        if not viewer.group_ids:
            return InboxNav(shown=False, pending=0)
        named = named.where(ApproverGroup.group_id.in_(sorted(viewer.group_ids)))
    if (await db.execute(named.limit(1))).first() is None:
        return InboxNav(shown=False, pending=0)
    base = _inbox(user_id, viewer)
    pending = int((await db.execute(select(func.count()).select_from(base.subquery()))).scalar_one())
    return InboxNav(shown=True, pending=pending)
