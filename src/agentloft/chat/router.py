"""Chat HTTP API. Streams are Vercel AI SDK UI Message Stream v1 over SSE.

- ``POST /api/agents/{slug}/chat`` {message, sessionId?} → SSE of the new turn. The session id is in
  the ``X-Session-Id`` response header (and in the ``start`` chunk's ``messageId`` for the reply).
- ``POST /api/llm/chat`` {message, sessionId?} → the same with the default model and the user's tools.
  Both take ``attachments`` (``chat.attachments``) and ``knowledgeIds`` (``chat.knowledge``).
- ``GET /api/agent-sessions`` (own, newest first; ``kind``/``agentId`` filters, ``source=api``: those
  started through the OpenAI-compatible API), ``GET/PATCH/DELETE
  /api/agent-sessions/{id}`` (deleting stops a running reply); ``POST /api/agent-sessions/{id}/title``
  names a session from its first exchange (``chat.titles``).
- ``GET /api/agent-sessions/search?q=`` (same filters and paging) → the sessions whose title or messages
  hold every term, best first, each with where it matched and a snippet (``chat.search``).
- ``GET /api/agent-sessions/{id}/stream`` → replay + follow the running turn (``X-Stream-Resume:
  true``), or ``{"active": false}``.
- ``POST /api/agent-sessions/{id}/approvals`` {toolCallId, approved, reason?} → SSE of the resumed
  run, or 202 ``{"waitingFor": [...]}`` while other calls of the same step still wait. A call of a tool
  with approver groups is answered by them, not the requester (403 ``approval_by_approvers``); an
  approver gets ``{toolCallId, approved, resumed}``, never the stream (``chat.approvals``).
- ``GET /api/approvals`` → the pending calls the caller may decide as an approver: tool, input,
  requester, agent, session title, when, approver groups and ``context`` (the last user message and the
  assistant's text before the call); paged, oldest first.
- ``POST /api/agent-sessions/{id}/stop`` → ``{"stopped": bool}``.
- ``POST /api/agent-sessions/{id}/regenerate`` → SSE of a new reply to the last user message (also the
  way to retry a reply that failed); ``POST /api/agent-sessions/{id}/messages/{messageId}/resend``
  {message?} → SSE of the turn started again from that user message, edited when ``message`` is given.
  Both cut the conversation after that message first (messages and model history); 409 while a reply
  is written or an approval waits. What the removed replies did (documents written, A2A tasks, calls
  to other services) stays done: only the conversation forgets it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse

from agentloft.auth.dependencies import CurrentUser, client_ip
from agentloft.chat import approvals, search, service, titles, turns, wire
from agentloft.chat.dependencies import OwnedSession
from agentloft.chat.models import AgentMessage, AgentSession
from agentloft.chat.schemas import (
    ApprovalAgent,
    ApprovalAnswer,
    ApprovalContext,
    ApprovalPerson,
    ApprovalRecorded,
    ApprovalWaiting,
    ChatRequest,
    GroupName,
    InboxApproval,
    KnowledgeRef,
    MessageRead,
    PendingApproval,
    ResendRequest,
    SessionDetail,
    SessionMatch,
    SessionRead,
    SessionSearchHit,
    SessionUpdate,
    SnippetPart,
    StopResult,
)
from agentloft.core.dependencies import DbSession, Paging, Rt
from agentloft.core.runtime import Runtime
from agentloft.core.schemas import DbInt, Page
from agentloft.groups import approvers as approver_groups
from agentloft.groups.dependencies import CallerViewer

router = APIRouter(tags=["chat"])

async def _frames(rt: Runtime, key: str) -> AsyncIterator[str]:
    rt.metrics.follower(+1)
    try:
        async for frames in rt.buffers.subscribe(key):
            yield frames
    finally:
        rt.metrics.follower(-1)


def sse_response(rt: Runtime, key: str, *, session_id: str | None = None, resume: bool = False) -> StreamingResponse:
    """Subscribe an HTTP response to a buffer: replay from the start, then follow live."""
    headers = {**wire.HEADERS, **(wire.RESUMED if resume else {})}
    if session_id:
        headers["X-Session-Id"] = session_id
    return StreamingResponse(_frames(rt, key), media_type=wire.MEDIA_TYPE, headers=headers)


def _session_read(row: AgentSession, names: dict[int, tuple[str, str]]) -> SessionRead:
    slug, name = names.get(row.agent_id, (None, None)) if row.agent_id is not None else (None, None)
    return SessionRead(id=row.id, title=row.title, kind=row.kind, agent_id=row.agent_id, agent_slug=slug,
                       agent_name=name, status=row.status, title_source=row.title_source,
                       created_at=row.created_at, updated_at=row.updated_at)


@router.post("/api/agents/{slug}/chat")
async def agent_chat(slug: str, body: ChatRequest, user: CurrentUser, rt: Rt) -> StreamingResponse:
    key = await turns.start_chat(rt, user=user, agent_slug=slug, message=body.message, session_id=body.session_id,
                                 file_ids=body.attachments, knowledge_ids=body.knowledge_ids)
    return sse_response(rt, key, session_id=key)


@router.post("/api/llm/chat")
async def llm_chat(body: ChatRequest, user: CurrentUser, rt: Rt) -> StreamingResponse:
    key = await turns.start_chat(rt, user=user, agent_slug=None, message=body.message, session_id=body.session_id,
                                 file_ids=body.attachments, knowledge_ids=body.knowledge_ids)
    return sse_response(rt, key, session_id=key)


@router.get("/api/agent-sessions", response_model=Page[SessionRead])
async def list_sessions(
    user: CurrentUser,
    viewer: CallerViewer,
    db: DbSession,
    paging: Paging,
    kind: Annotated[Literal["agent", "llm"] | None, Query()] = None,
    agent_id: Annotated[DbInt | None, Query(alias="agentId")] = None,
    source: Annotated[Literal["api"] | None, Query()] = None,
) -> Page[SessionRead]:
    rows, total = await service.list_sessions(db=db, user_id=user.id, viewer=viewer, page=paging, kind=kind,
                                              agent_id=agent_id, source=source)
    names = await service.agent_names(db=db, agent_ids=[r.agent_id for r in rows])
    return Page[SessionRead].of([_session_read(r, names) for r in rows], total, paging)


def _search_hit(hit: search.SessionHit, names: dict[int, tuple[str, str]]) -> SessionSearchHit:
    parts = [SnippetPart(text=piece, hit=is_hit) for piece, is_hit in hit.snippet.pieces()]
    message = hit.message
    match = SessionMatch(field="message" if message else "title", message_id=message.id if message else None,
                         role=message.role if message else None, snippet=hit.snippet.text, parts=parts)
    return SessionSearchHit(**_session_read(hit.session, names).model_dump(), match=match)


# Declared before ``/api/agent-sessions/{session_id}``, which would otherwise take "search" for an id.
@router.get("/api/agent-sessions/search", response_model=Page[SessionSearchHit])
async def search_sessions(
    user: CurrentUser,
    viewer: CallerViewer,
    db: DbSession,
    paging: Paging,
    q: Annotated[str, Query(min_length=1, max_length=500, description="Words to find (all must match).")],
    kind: Annotated[Literal["agent", "llm"] | None, Query()] = None,
    agent_id: Annotated[DbInt | None, Query(alias="agentId")] = None,
    source: Annotated[Literal["api"] | None, Query()] = None,
) -> Page[SessionSearchHit]:
    hits = await service.search_sessions(db=db, user_id=user.id, viewer=viewer, q=q, page=paging, kind=kind,
                                         agent_id=agent_id, source=source)
    names = await service.agent_names(db=db, agent_ids=[h.session.agent_id for h in hits.items])
    return Page[SessionSearchHit].of([_search_hit(h, names) for h in hits.items], hits.total, paging)


@router.post("/api/agent-sessions/{session_id}/title", response_model=SessionRead)
async def name_session(session_id: str, user: CurrentUser, rt: Rt) -> SessionRead:
    """Name the session from its first exchange with one short model call, if it still has its
    first-words title (and titles are on, and it is no A2A task's session); else return it as it is."""
    row = await titles.name_session(rt, user=user, session_id=session_id)
    async with rt.db.read_session() as db:
        names = await service.agent_names(db=db, agent_ids=[row.agent_id])
    return _session_read(row, names)


@router.get("/api/agent-sessions/{session_id}", response_model=SessionDetail)
async def read_session(session_id: str, user: CurrentUser, rt: Rt) -> SessionDetail:
    got = await turns.session_detail(rt, user=user, session_id=session_id)
    base = _session_read(got.session, got.names).model_dump()
    messages = [_message_read(m, got.models, got.files) for m in got.messages]
    return SessionDetail(
        **base,
        messages=messages,
        pending_approvals=[PendingApproval(tool_call_id=a.tool_call_id, tool_name=a.tool_name, input=a.input,
                                           approver_groups=[GroupName(id=g, name=n)
                                                            for g, n in got.deciders[a.tool_call_id]])
                           for a in got.pending],
        active=got.active,
        knowledge=[KnowledgeRef(id=i, name=n) for i, n in got.knowledge],
        input_tokens=sum(m.input_tokens or 0 for m in messages),
        output_tokens=sum(m.output_tokens or 0 for m in messages),
    )


def _message_read(row: AgentMessage, models: dict[int | None, str], files: set[str]) -> MessageRead:
    read = MessageRead.model_validate(row)
    attached = [a.model_copy(update={"deleted": a.id not in files}) for a in read.attachments]
    return read.model_copy(update={"model_name": models.get(row.model_id), "attachments": attached})


@router.patch("/api/agent-sessions/{session_id}", response_model=SessionRead)
async def rename_session(session: OwnedSession, body: SessionUpdate, user: CurrentUser, db: DbSession) -> SessionRead:
    row = await service.rename_session(db=db, session_id=session.id, user_id=user.id, title=body.title)
    return _session_read(row, await service.agent_names(db=db, agent_ids=[row.agent_id]))


@router.delete("/api/agent-sessions/{session_id}", status_code=204)
async def delete_session(session_id: str, user: CurrentUser, rt: Rt) -> Response:
    """Delete the session; a reply it is writing is stopped first (``turns.delete``)."""
    await turns.delete(rt, user=user, session_id=session_id)
    return Response(status_code=204)


@router.get("/api/agent-sessions/{session_id}/stream", response_model=None)
async def resume_stream(session_id: str, user: CurrentUser, viewer: CallerViewer, rt: Rt) -> Response:
    async with rt.db.session() as db:
        await service.get_readable_session(db=db, session_id=session_id, user_id=user.id, viewer=viewer)
    if not await rt.buffers.is_active(session_id):
        return JSONResponse({"active": False})
    return sse_response(rt, session_id, session_id=session_id, resume=True)


@router.post("/api/agent-sessions/{session_id}/regenerate")
async def regenerate(session_id: str, user: CurrentUser, rt: Rt) -> StreamingResponse:
    key = await turns.rewind(rt, user=user, session_id=session_id, message_id=None, text=None)
    return sse_response(rt, key, session_id=key)


@router.post("/api/agent-sessions/{session_id}/messages/{message_id}/resend")
async def resend(session_id: str, message_id: str, body: ResendRequest, user: CurrentUser,
                 rt: Rt) -> StreamingResponse:
    key = await turns.rewind(rt, user=user, session_id=session_id, message_id=message_id, text=body.message)
    return sse_response(rt, key, session_id=key)


@router.post("/api/agent-sessions/{session_id}/approvals", response_model=None)
async def answer_approval(session_id: str, body: ApprovalAnswer, request: Request, user: CurrentUser,
                          rt: Rt) -> Response:
    got = await turns.answer(rt, user=user, session_id=session_id, tool_call_id=body.tool_call_id,
                             approved=body.approved, reason=body.reason, ip=client_ip(request))
    if not got.by_requester:  # an approver: the conversation (and its stream) stays the requester's
        recorded = ApprovalRecorded(tool_call_id=body.tool_call_id, approved=body.approved, resumed=got.key is not None)
        return JSONResponse(recorded.model_dump(by_alias=True))
    if got.key is None:
        return JSONResponse(ApprovalWaiting(waiting_for=got.waiting).model_dump(by_alias=True), status_code=202)
    return sse_response(rt, got.key, session_id=session_id)


@router.get("/api/approvals", response_model=Page[InboxApproval])
async def approvals_inbox(user: CurrentUser, viewer: CallerViewer, db: DbSession,
                          paging: Paging) -> Page[InboxApproval]:
    """The pending tool calls the caller may decide as an approver (``chat.approvals``), oldest first."""
    items, total = await approvals.inbox(db=db, user_id=user.id, viewer=viewer, page=paging)
    agents = await service.agent_names(db=db, agent_ids=[i.session.agent_id for i in items])
    groups = await approver_groups.group_names(db=db, group_ids=[g for i in items for g in i.approver_ids])
    return Page[InboxApproval].of([_inbox_item(i, agents, groups) for i in items], total, paging)


def _inbox_item(item: approvals.InboxItem, agents: dict[int, tuple[str, str]], groups: dict[int, str]) -> InboxApproval:
    a, s = item.approval, item.session
    agent = agents.get(s.agent_id) if s.agent_id is not None else None
    return InboxApproval(
        session_id=s.id, tool_call_id=a.tool_call_id, tool_id=item.tool.id, tool_slug=item.tool.slug,
        tool_name=item.tool.name, input=a.input, requester=ApprovalPerson(id=s.user_id, name=item.requester),
        agent=ApprovalAgent(id=s.agent_id, name=agent[1]) if agent and s.agent_id is not None else None,
        session_title=s.title, created_at=a.created_at,
        approver_groups=[GroupName(id=g, name=groups[g]) for g in item.approver_ids if g in groups],
        context=ApprovalContext(user_message=item.user_message, assistant_text=item.assistant_text))


@router.post("/api/agent-sessions/{session_id}/stop", response_model=StopResult)
async def stop_session(session_id: str, user: CurrentUser, rt: Rt) -> StopResult:
    return StopResult(stopped=await turns.stop(rt, user=user, session_id=session_id))
