"""Agents as OpenAI models: the turn behind ``POST /v1/chat/completions`` and the list behind ``/v1/models``.

A completion is one turn of the agent named by ``model``, run by the chat engine exactly as a chat's
(``engine.chat_inputs`` reads the agent, its model and tools for the token's user, so the hiding rules
are the chat's; ``engine.prepare_turn`` claims a new session; ``engine.drive`` runs it in the background,
so a client that hangs up does not stop the run, as a closed browser does not). What differs is the input:

- The request carries a whole conversation. Its earlier user and assistant messages become the new
  session's messages and its model history (text only), its last user message the turn's message, and
  its system (or developer) messages are added after the agent's own prompt (a detached copy of the agent
  row carries the joined prompt, as ``a2a.service._limited`` does for an output limit).
- Every message of the session is ``source='api'``: the usage is recorded as ``api``, and the session
  list's ``source=api`` filter finds the session. It is an ordinary session of the user, shown in the
  sidebar and continued in the chat like any other.

Decided here: a ``tool`` message or an assistant message with ``tool_calls`` in the request is refused
(400): the agent's tools run on the server, and a client's own tools are not offered to the model (a
request's ``tools`` are ignored, as are sampling settings such as ``temperature``: the agent's
configuration decides). Content parts other than text are refused too: files reach a chat through the
upload API, not inline.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.agents import service as agents_service
from agentloft.agents.models import Agent
from agentloft.auth.models import User
from agentloft.chat import engine
from agentloft.chat import service as chat_service
from agentloft.chat.models import AWAITING_APPROVAL, COMPLETE
from agentloft.chat.relay import TextRelay
from agentloft.core.errors import AppError, Invalid, NotFound
from agentloft.core.ids import new_id
from agentloft.core.runtime import Runtime
from agentloft.core.schemas import PageParams
from agentloft.groups import access
from agentloft.openai_api.schemas import ChatMessage

log = logging.getLogger(__name__)

SOURCE = "api"
# ``/v1/models`` lists every agent the user may use on one page (clients expect the whole list at once);
# an instance has tens of agents, this bound only keeps a runaway one from answering with all of them.
MAX_MODELS = 1000


class ModelNotFound(NotFound):
    code = "model_not_found"


async def list_models(*, db: AsyncSession, viewer: access.Viewer) -> list[Agent]:
    """The agents the user may chat with: ``GET /api/agents``'s query, all on one page."""
    rows, _ = await agents_service.list_agents(db=db, page=PageParams(page=1, page_size=MAX_MODELS),
                                               enabled_only=True, viewer=viewer)
    return rows


@dataclass(frozen=True)
class Conversation:
    """A request's messages as a turn takes them."""

    system: list[str]
    earlier: list[tuple[str, str]]  # (role, text), user and assistant, oldest first
    message: str


def _text_of(index: int, message: ChatMessage) -> str:
    content = message.content
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part.type != "text" or part.text is None:
            raise Invalid(f"messages[{index}]: only text content is supported (not '{part.type}')",
                          code="unsupported_content")
        texts.append(part.text)
    return "".join(texts)


def conversation_of(messages: list[ChatMessage]) -> Conversation:
    """Split the request's messages; 400 for a conversation a turn cannot take."""
    system: list[str] = []
    said: list[tuple[str, str]] = []
    for i, m in enumerate(messages):
        if m.role == "tool" or m.tool_calls:
            raise Invalid(f"messages[{i}]: tool calls and tool results are not accepted; the agent's tools "
                          "run on the server", code="unsupported_message")
        text = _text_of(i, m)
        if m.role in ("system", "developer"):
            if text.strip():
                system.append(text)
        else:
            said.append((m.role, text))
    if not said or said[-1][0] != "user" or not said[-1][1].strip():
        raise Invalid("the last message (system messages aside) must be a user message with text",
                      code="no_user_message")
    return Conversation(system=system, earlier=said[:-1], message=said[-1][1])


def history_json(earlier: list[tuple[str, str]]) -> str | None:
    """The earlier messages as the model history a turn continues (None: none)."""
    if not earlier:
        return None
    history: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(content=text)]) if role == "user" else ModelResponse(parts=[TextPart(text)])
        for role, text in earlier
    ]
    return ModelMessagesTypeAdapter.dump_json(history).decode()


def _with_system(agent: Agent, system: list[str]) -> Agent:
    """A detached copy of the agent whose prompt has the request's system messages after its own (the
    row comes from the shared read cache and is never changed)."""
    if not system:
        return agent
    copy = Agent(**{c.key: getattr(agent, c.key) for c in Agent.__table__.columns})
    copy.system_prompt = "\n\n".join(p for p in [agent.system_prompt or "", *system] if p)
    return copy


@dataclass
class Started:
    """A completion's turn, running: its session, the buffer its chunks go to, the run, and its reply's
    text as the engine makes it (``text_batches``)."""

    session_id: str
    buffer_key: str
    message_id: str
    run: asyncio.Task[engine.TurnResult | None]
    reply: TextRelay


async def _drive(rt: Runtime, turn: engine.PreparedTurn) -> engine.TurnResult | None:
    """The run in its own task; None when it was cancelled (a shutdown: ``drive`` saved it already)."""
    try:
        return await engine.drive(rt, turn)
    except asyncio.CancelledError:
        log.debug("API run of %s ended by cancellation", turn.session_id)
        return None


async def start(*, rt: Runtime, user: User, slug: str, conversation: Conversation) -> Started:
    """Start the turn in a new session of the user; 404 ``model_not_found`` for an agent the user may not
    use (unknown, disabled, admin-only or limited to other groups: the chat's own rule), 429 for a budget
    used up or too many chats running, as in the chat."""
    try:
        agent, inputs = await engine.chat_inputs(rt, agent_slug=slug, user_id=user.id, user_role=user.role)
    except NotFound as exc:
        if exc.code != "agent_not_found":
            raise
        raise ModelNotFound(f"The model '{slug}' does not exist or you do not have access to it") from exc
    assert agent is not None  # a slug always names an agent
    session_id = new_id("as")
    reply = TextRelay()
    create = chat_service.NewSession(user_id=user.id, agent_id=agent.id, kind="agent",
                                     history=history_json(conversation.earlier), earlier=conversation.earlier)
    request = engine.TurnRequest(
        user_id=user.id, user_role=user.role, group_ids=inputs.viewer.group_ids,
        agent=_with_system(agent, conversation.system), session_id=session_id, user_text=conversation.message,
        message_extra={"source": SOURCE}, running_limit=rt.settings.max_running_chats_per_user, on_chunk=reply,
    )
    turn = await engine.prepare_turn(rt, request, create=create, inputs=inputs)
    rt.runs.note_owner(session_id, user.id)
    run = cast("asyncio.Task[engine.TurnResult | None]", rt.runs.spawn(_drive(rt, turn)))
    run.add_done_callback(lambda _: reply.end())
    return Started(session_id=session_id, buffer_key=turn.buffer_key, message_id=turn.message_id, run=run,
                   reply=reply)


async def result_of(*, started: Started) -> engine.TurnResult | None:
    """The turn's result. Shielded: a client that hangs up cancels its request, never the run."""
    return await asyncio.shield(started.run)


async def text_batches(*, started: Started) -> AsyncIterator[str]:
    """The reply's text as it arrives, each piece all that arrived since the one before, taken from the
    engine's chunks as the run makes them (``chat.relay``, as the A2A server takes it); ends when the run
    is done. What a streaming caller relays (``/v1``'s chunks, ``/mcp``'s progress notifications); one
    reader per turn (the run is always this worker's own, so nothing is read back from the buffer)."""
    async for text in started.reply.texts():
        yield text


def reply_text(*, result: engine.TurnResult | None, chat_url: str) -> str:
    """What the caller answers: the reply, with the approval note when the turn waits for one; a turn that
    ended otherwise is refused: with the budget's 429 when one stopped it between two model calls (the
    reply so far is kept in the chat), else with its reason (failed, stopped, interrupted)."""
    if result is not None and result.status == COMPLETE:
        return result.text
    if result is not None and result.status == AWAITING_APPROVAL:
        note = approval_note(result=result, chat_url=chat_url)
        return f"{result.text}\n\n{note}" if result.text else note
    if result is not None and result.refusal is not None:  # a budget used up between two model calls
        raise result.refusal
    reason = (result.error if result is not None else None) or "the reply was interrupted"
    raise TurnFailed(f"The agent did not finish its reply: {reason}")


def approval_note(*, result: engine.TurnResult, chat_url: str) -> str:
    """What a completion says when the turn paused on tool calls that need approval."""
    names = ", ".join(sorted({str(p.get("toolName")) for p in result.pending})) or "a tool"
    return (f"The call of {names} waits for approval in the chat at {chat_url}. "
            "Approve or reject it there; the reply continues in that chat.")


class TurnFailed(AppError):
    """The turn ran but ended without a reply (the model failed, it was stopped or interrupted)."""

    status = 502
    code = "turn_failed"
