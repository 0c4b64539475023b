"""Agents as MCP tools: the list behind ``tools/list`` and the turn behind ``tools/call``.

Both stand on the OpenAI-compatible API's service, so the two ways in never disagree:

- The tools are ``/v1/models``'s agents (``openai_api.service.list_models``: the chat's visibility, so
  admin-only agents and agents limited to other groups are left out), each named ``ask_<slug>`` with the
  slug's dashes as underscores (a slug is lowercase letters, digits and dashes, so no two agents share a
  name, and the name matches the ``[A-Za-z0-9_]`` that every MCP host accepts).
- A call runs one turn exactly as a completion does (``openai_api.service.start``): a new session of the
  user with ``source='api'`` (usage recorded as ``api``, found under the session list's ``api`` filter),
  the message as the turn's only user message, the reply's text relayed while it streams
  (``text_batches``) and answered as the completion's text (``reply_text``, with its approval note).

Decided here:
- A tool name is resolved against the caller's own list, so an agent hidden from them answers exactly
  as a name that names nothing ("Unknown tool: …"); the turn's own loader checks again, for an agent
  hidden between the list and the start.
- Every refusal a caller can act on (unknown tool, bad arguments, a used-up budget, too many chats
  running, a turn that failed) is a tool result with ``isError``, its message the error's: MCP hosts
  show such a result to the model and the user, while a protocol error is often shown as a crash.
- The run does not depend on the request: a host that gives up (or cancels) leaves the turn running
  to its end in the background, kept in the chat, as a closed browser does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from agentloft.auth.models import User
from agentloft.core.errors import AppError
from agentloft.core.runtime import Runtime
from agentloft.groups import access
from agentloft.openai_api import service as completions

TOOL_PREFIX = "ask_"
INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask the agent."}},
    "required": ["message"],
}

Progress = Callable[[str], Awaitable[None]]
"""Called with each batch of the reply's text as it streams."""


@dataclass(frozen=True)
class Caller:
    """Who calls, as the HTTP edge resolved it: the token's user, and the address their chats are at."""

    user: User
    base_url: str


def tool_name(slug: str) -> str:
    return TOOL_PREFIX + slug.replace("-", "_")


async def _visible(rt: Runtime, user: User) -> list[tuple[str, str, str | None]]:
    """(tool name, slug, description) of every agent the user may use."""
    viewer = await access.viewer_of(rt.db, user_id=user.id, role=user.role)
    async with rt.db.read_session() as db:
        rows = await completions.list_models(db=db, viewer=viewer)
    return [(tool_name(r.slug), r.slug, r.description) for r in rows]


async def list_tools(*, rt: Runtime, user: User) -> list[types.Tool]:
    return [types.Tool(name=name, description=description or f"Ask the agent {slug}.", input_schema=INPUT_SCHEMA)
            for name, slug, description in await _visible(rt, user)]


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def _message_of(arguments: dict[str, Any] | None) -> str | None:
    message = (arguments or {}).get("message")
    return message if isinstance(message, str) and message.strip() else None


async def call_tool(*, rt: Runtime, caller: Caller, name: str, arguments: dict[str, Any] | None,
                    progress: Progress) -> types.CallToolResult:
    """Run one turn of the agent the tool names and answer with its reply (see the module's doc)."""
    slug = next((s for n, s, _ in await _visible(rt, caller.user) if n == name), None)
    if slug is None:
        return _error(f"Unknown tool: {name}")
    message = _message_of(arguments)
    if message is None:
        return _error("The argument 'message' must be a string with text")
    conversation = completions.Conversation(system=[], earlier=[], message=message)
    try:
        started = await completions.start(rt=rt, user=caller.user, slug=slug, conversation=conversation)
    except completions.ModelNotFound:  # hidden since the list was read: the same answer as above
        return _error(f"Unknown tool: {name}")
    except AppError as exc:  # a used-up budget, too many chats running
        return _error(exc.message)
    async for text in completions.text_batches(started=started):
        await progress(text)
    result = await completions.result_of(started=started)
    try:
        reply = completions.reply_text(result=result, chat_url=f"{caller.base_url}/chat/{started.session_id}")
    except AppError as exc:  # failed, stopped, or a budget used up between two model calls
        return _error(exc.message)
    return types.CallToolResult(content=[types.TextContent(text=reply)])
