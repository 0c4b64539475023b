"""HTTP for A2A: the side panel's stream and the public A2A 1.0 server (cards and JSON-RPC).

``GET /api/agents/a2a/stream?taskId=…`` replays and follows the callee's reply for the user who started
the call; ``POST /api/agents/a2a/tasks/{taskId}/input`` {message} answers a remote callee that asked for
input. ``/a2a/{slug}/`` answers A2A JSON-RPC and ``/a2a/{slug}/rest/…`` the HTTP+JSON binding
(``a2a.rest``) for each enabled, A2A-callable local agent, looked up per request, so agents created or
changed at run time are served without a restart.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from agentloft.a2a import limits, rest, service, tasks, waiting
from agentloft.a2a import server as a2a_server
from agentloft.a2a.schemas import TaskInput
from agentloft.auth.dependencies import CurrentUser, bearer_token, token_user
from agentloft.chat import wire
from agentloft.core.dependencies import DbSession, Rt
from agentloft.core.errors import Invalid, Unauthorized
from agentloft.core.public_url import public_base_url
from agentloft.core.runtime import Runtime
from agentloft.groups import access

router = APIRouter()

# Resumed: like the chat's resumed stream, every subscription replays the reply from its start.
PANEL_HEADERS = {**wire.HEADERS, **wire.RESUMED, "Connection": "keep-alive"}


# ---------------------------------------------------------------- the side panel's stream


@router.get("/api/agents/a2a/stream", response_model=None)
async def a2a_stream(
    user: CurrentUser, db: DbSession, rt: Rt, task_id: Annotated[str | None, Query(alias="taskId")] = None
) -> Response:
    """The callee's reply for one agent-invoke call: replay what was sent, then follow live."""
    if not task_id:
        raise Invalid("taskId is required", code="task_id_required", status=400)
    row = await service.get_panel_task(db=db, task_id=task_id, user_id=user.id)
    if not await service.wait_for_buffer(rt=rt, task_id=task_id):
        return JSONResponse(_no_buffer(row))
    return StreamingResponse(_panel_frames(rt, task_id), media_type=wire.MEDIA_TYPE, headers=PANEL_HEADERS)


def _no_buffer(row: service.A2ATaskSession) -> dict[str, Any]:
    """A panel opened once its stream is gone: nothing to follow, but a remote task's question to answer
    (``waiting.question_of``); a local callee's approvals come from its session (``pendingApprovals``)."""
    question = waiting.question_of(row)
    if question is not None:
        return {"active": False, "reason": "input-required", "question": question}
    return {"active": False, "reason": "no-buffer"}


async def _panel_frames(rt: Runtime, task_id: str) -> AsyncIterator[bytes]:
    """The buffer's frames, then a guaranteed ending: an ``error`` chunk if the task failed without one,
    and the stream terminator, so the panel always knows the reply is done."""

    saw_error = saw_done = False
    async for frame in rt.buffers.subscribe(tasks.buffer_key(task_id)):
        saw_error = saw_error or wire.has_error(frame)
        saw_done = saw_done or wire.has_done(frame)
        yield frame.encode()
    if not saw_error:
        async with rt.db.session() as db:
            row = await db.get(service.A2ATaskSession, task_id)
        if row is not None and row.state in (tasks.FAILED, tasks.CANCELED):
            message = "the called agent failed" if row.state == tasks.FAILED else "the call was canceled"
            yield wire.error_frame(message).encode()
    if not saw_done:
        yield wire.DONE.encode()


@router.post("/api/agents/a2a/tasks/{task_id}/input", status_code=202)
async def a2a_task_input(task_id: str, body: TaskInput, user: CurrentUser, rt: Rt) -> dict[str, str]:
    """Answer a remote agent's task that asks for input (``a2a.waiting.answer_remote``); the panel then
    follows the task's stream again."""
    await waiting.answer_remote(rt, user_id=user.id, task_id=task_id, text=body.message)
    return {"taskId": task_id}


# ---------------------------------------------------------------- the public A2A server


async def _a2a_user(request: Request, rt: Runtime) -> a2a_server.A2AUser:
    """A2A callers sign in with a personal API token; anyone else is refused before the SDK runs."""
    token = bearer_token(request)
    if not token:
        raise Unauthorized("A2A calls need a personal API token (Authorization: Bearer …)")
    user = await token_user(rt.db, token)
    if user is None:
        raise Unauthorized("invalid API token", code="invalid_token")
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)
    return a2a_server.A2AUser(user.id, user.username, user.role, group_ids=viewer.group_ids)


async def _card_viewer(request: Request, rt: Runtime) -> access.Viewer | None:
    """Who asks for a card: nobody (a card is public), or the user of a valid bearer token."""
    token = bearer_token(request)
    user = await token_user(rt.db, token) if token else None
    return await access.viewer_of(rt.db, user_id=user.id, role=user.role) if user is not None else None


@router.get("/a2a/{slug}/.well-known/agent-card.json", include_in_schema=False)
async def agent_card(slug: str, request: Request, db: DbSession, rt: Rt) -> JSONResponse:
    """Public, like any A2A card: it says how to call the agent, not what it was told. The card of an
    agent limited to groups is only for a caller whose API token is a member's (or an admin's): to
    anyone else it does not exist."""
    viewer = await _card_viewer(request, rt)
    agent = await service.get_callable_agent(db=db, slug=slug, local_only=True, viewer=viewer)
    card = a2a_server.build_card(agent, public_base_url(request, rt.settings))
    return JSONResponse(a2a_server.agent_card_dict(card))


@router.post("/a2a/{slug}/", include_in_schema=False)
@router.post("/a2a/{slug}", include_in_schema=False)
async def a2a_rpc(slug: str, request: Request, rt: Rt) -> Response:
    """A2A 1.0 JSON-RPC for one agent (SendMessage, SendStreamingMessage, GetTask, CancelTask, …)."""
    request.state.a2a_user = await _a2a_user(request, rt)
    try:
        checked = await limits.read(request)
    except limits.Refused as refused:
        return rest.jsonrpc_error(None, refused.jsonrpc_error())
    if not rest.is_json(request):
        return rest.content_type_error(checked)
    try:
        limits.check_message(limits.jsonrpc_message(checked))
    except limits.Refused as refused:
        return rest.jsonrpc_error(checked.request_id(), refused.jsonrpc_error())
    async with rt.db.session() as db:
        agent = await service.get_callable_agent(db=db, slug=slug, local_only=True,
                                                 viewer=request.state.a2a_user.viewer)
    card = a2a_server.build_card(agent, public_base_url(request, rt.settings))
    dispatcher = rt.a2a.dispatcher(agent, card)
    return await dispatcher.handle_requests(checked)


@router.api_route("/a2a/{slug}/rest/{path:path}", methods=["GET", "POST", "DELETE"], include_in_schema=False)
async def a2a_rest(slug: str, path: str, request: Request, rt: Rt) -> Response:
    """A2A 1.0 HTTP+JSON for one agent (``message:send``, ``message:stream``, ``tasks/{id}``, …)."""
    request.state.a2a_user = await _a2a_user(request, rt)
    try:
        checked = await limits.read(request)
        limits.check_message(limits.rest_message(checked))
    except limits.Refused as refused:
        return rest.rest_error(refused.rest_error())
    async with rt.db.session() as db:
        agent = await service.get_callable_agent(db=db, slug=slug, local_only=True,
                                                 viewer=request.state.a2a_user.viewer)
    handler = rt.a2a.handler(agent, a2a_server.build_card(agent, public_base_url(request, rt.settings)))
    return await rest.dispatch(checked, path, handler, rt.a2a.context_builder)
