"""The OpenAI-compatible API: ``GET /v1/models`` and ``POST /v1/chat/completions`` (``stream`` or not).

Authenticated by a personal API token (``Authorization: Bearer …``, the Tokens page's) and nothing else:
OpenAI clients send one, and a session cookie would put these writes within a cross-site form's reach.

Errors here are in OpenAI's shape, ``{"error": {"message", "type", "param", "code"}}``, not in the rest
of the API's: OpenAI's clients read that shape (the SDKs raise ``NotFoundError`` with its ``code``, show
its ``message``), and nothing else calls these routes. The routes' own class (``OpenAIRoute``) turns
every ``AppError`` and validation failure of these routes into that shape, and only theirs; FastAPI's
exception handlers are the whole app's, so a handler there would have to know these paths. The
``X-Request-ID`` header is still set by the request-id middleware, outside all routes. A validation
failure (any 422 of ours) is a 400, as OpenAI answers one. What fails before a route is chosen (an
unknown ``/v1`` path, a body over the size limit) keeps the app's shape.

Streaming sends ``chat.completion.chunk`` objects as SSE ``data:`` lines as the reply's text arrives
(taken from the engine's chunks, as the A2A server takes it: ``service.text_batches``), then one chunk
with ``finish_reason``, a usage chunk (``choices: []``) when ``stream_options.include_usage`` asks for
it, and ``data: [DONE]``. A turn that fails after its stream began ends with an ``error`` event in the
same shape (the SDKs raise it).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, StreamingResponse
from fastapi.routing import APIRoute

from agentloft.auth.dependencies import TokenUser
from agentloft.chat.models import AWAITING_APPROVAL
from agentloft.core.dependencies import DbSession, Rt
from agentloft.core.errors import AppError, invalid_request
from agentloft.core.public_url import public_base_url
from agentloft.groups import access
from agentloft.openai_api import service
from agentloft.openai_api.schemas import (
    AssistantMessage,
    ChatCompletion,
    ChatCompletionChunk,
    ChatCompletionRequest,
    Choice,
    ChunkChoice,
    Delta,
    ModelCard,
    ModelList,
    Usage,
)

# OpenAI's error ``type`` for each status (their API's words; clients branch on status and ``code``).
_TYPES = {400: "invalid_request_error", 401: "invalid_request_error", 403: "invalid_request_error",
          404: "invalid_request_error", 409: "invalid_request_error", 413: "invalid_request_error",
          422: "invalid_request_error", 429: "rate_limit_exceeded"}


def error_body(status: int, message: str, code: str) -> dict[str, Any]:
    """An error in OpenAI's shape; ``type`` in their words for the status (a used-up budget is their
    ``insufficient_quota``)."""
    kind = "insufficient_quota" if code == "budget_exceeded" else _TYPES.get(status, "server_error")
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def openai_error(status: int, message: str, code: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse(error_body(status, message, code), status_code=status, headers=headers)


class OpenAIRoute(APIRoute):
    """A route of ``/v1``: its errors in OpenAI's shape (see the module's doc)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def in_openai_shape(request: Request) -> Response:
            try:
                return await handler(request)
            except AppError as exc:
                status = 400 if exc.status == 422 else exc.status  # OpenAI's status for a bad request
                return openai_error(status, exc.message, exc.code, exc.headers)
            except RequestValidationError as exc:
                invalid = invalid_request(exc)
                return openai_error(400, invalid.message, "invalid_request")

        return in_openai_shape


router = APIRouter(prefix="/v1", tags=["openai"], route_class=OpenAIRoute)


@router.get("/models", response_model=ModelList)
async def list_models(user: TokenUser, db: DbSession, rt: Rt) -> ModelList:
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)
    rows = await service.list_models(db=db, viewer=viewer)
    return ModelList(data=[ModelCard(id=r.slug, created=int(r.created_at.timestamp())) for r in rows])


@router.post("/chat/completions", response_model=None)
async def chat_completions(body: ChatCompletionRequest, user: TokenUser, request: Request,
                           rt: Rt) -> Response:
    conversation = service.conversation_of(body.messages)
    started = await service.start(rt=rt, user=user, slug=body.model, conversation=conversation)
    chat_url = f"{public_base_url(request, rt.settings)}/chat/{started.session_id}"
    headers = {"X-Session-Id": started.session_id}
    if body.stream:
        usage = bool(body.stream_options and body.stream_options.include_usage)
        return StreamingResponse(_stream(started, body.model, chat_url, usage), media_type="text/event-stream",
                                 headers={**headers, "Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
    result = await service.result_of(started=started)
    text = service.reply_text(result=result, chat_url=chat_url)
    assert result is not None  # ``reply_text`` refused a turn without a result
    completion = ChatCompletion(
        id=_completion_id(started), created=int(time.time()), model=body.model,
        choices=[Choice(message=AssistantMessage(content=text))],
        usage=Usage.of(result.input_tokens, result.output_tokens),
    )
    return JSONResponse(completion.model_dump(), headers=headers)


def _completion_id(started: service.Started) -> str:
    return f"chatcmpl-{started.message_id}"


def _sse(data: Any) -> str:
    return f"data: {json.dumps(data, ensure_ascii=False, separators=(',', ':'))}\n\n"


async def _stream(started: service.Started, model: str, chat_url: str,
                  include_usage: bool) -> AsyncIterator[str]:
    """The turn's text as chunks while it streams, then its ending (see the module's doc)."""
    cid, created = _completion_id(started), int(time.time())

    def chunk(delta: Delta, finish: str | None = None) -> str:
        return _sse(ChatCompletionChunk(id=cid, created=created, model=model,
                                        choices=[ChunkChoice(delta=delta, finish_reason=finish)]
                                        ).model_dump(exclude_none=True))

    yield chunk(Delta(role="assistant", content=""))
    async for text in service.text_batches(started=started):
        yield chunk(Delta(content=text))
    result = await service.result_of(started=started)
    try:
        full = service.reply_text(result=result, chat_url=chat_url)
    except AppError as exc:  # failed, or stopped by a budget (its 429's body)
        yield _sse(error_body(exc.status, exc.message, exc.code))
        yield "data: [DONE]\n\n"
        return
    assert result is not None
    if result.status == AWAITING_APPROVAL:
        yield chunk(Delta(content=full[len(result.text):]))
    yield chunk(Delta(), finish="stop")
    if include_usage:
        usage = Usage.of(result.input_tokens, result.output_tokens)
        yield _sse(ChatCompletionChunk(id=cid, created=created, model=model, choices=[], usage=usage).model_dump())
    yield "data: [DONE]\n\n"
