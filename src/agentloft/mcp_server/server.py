"""The MCP protocol side of ``/mcp``: the official SDK's low-level ``Server`` with our two handlers, and its
``StreamableHTTPSessionManager``, one per app (``rt.mcp_server``, made at start-up).

Stateless sessions, answered as SSE. Decided because an instance may run several workers behind a load
balancer (``--workers N``, or several machines): a stateful MCP session lives in the memory of the worker
that opened it, and the next request of the same host, sent to another worker, would be answered
``404 Session not found``. Stateless, every request stands alone (the token's user is resolved again on
each, as for ``/v1``), so any worker answers any request, and a restart loses nothing. Our tools need no
session: there are no subscriptions, no server-to-client requests (sampling, elicitation), and the tool
list is read per request. SSE rather than plain JSON responses because the progress notifications of a
``tools/call`` ride on that request's own response stream, which a JSON body cannot carry (in SSE mode
the SDK asks the client to accept both types, as its client and the usual hosts do).

With no session there is no server stream either, so ``GET /mcp`` is answered ``405`` by the router, as
the streamable HTTP transport allows ("the server does not offer an SSE stream at this endpoint"): the
SDK would hold such a stream open with nothing ever to send, a connection per host that also keeps a
worker's graceful shutdown waiting. ``DELETE`` (ending a session) is the SDK's ``405`` for the same reason.

Progress: while a ``tools/call`` streams, one ``notifications/progress`` per batch of the reply's text
(``openai_api.service.text_batches``), when the client sent a progress token: ``progress`` is the number
of characters so far (it only grows, as the spec asks, and no ``total`` is known), ``message`` the batch's
text, so a host that shows progress messages shows the reply as it is written.

The manager's task group runs in a task of its own for the app's lifetime (``start``/``stop``), not in the
lifespan's: its cancel scope then never wraps the app's own start-up and shutdown.

The user of a request is put in the ASGI scope by the HTTP edge (``router``), under ``CALLER``; the
handlers read it from the request the SDK hands them (``ctx.request``), so no handler ever runs for a
request without a valid token. The request's context variables go the same way (``CONTEXT``), so that a
call's turn runs in them, as a turn that ``/v1`` starts does: its log lines carry the request's id, its
spans sit in the request's trace.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from agentloft import __version__
from agentloft.core.runtime import Runtime
from agentloft.mcp_server import service

log = logging.getLogger(__name__)

CALLER = "agentloft.mcp_caller"  # the ASGI scope's key for the request's ``service.Caller``
CONTEXT = "agentloft.mcp_context"  # and for the request's ``contextvars`` (its id, its trace)
INSTRUCTIONS = ("Each tool is an agent of this agentloft instance: call it with a message and it answers "
                "with the agent's reply. Every call starts a new chat, kept in the user's chat list.")


def _caller(ctx: ServerRequestContext[Any, Any]) -> service.Caller:
    request = ctx.request
    caller = request.scope.get(CALLER) if request is not None else None
    if not isinstance(caller, service.Caller):  # only the router reaches the manager, and it always sets one
        raise RuntimeError("an MCP request without a caller")
    return caller


def _request_context(ctx: ServerRequestContext[Any, Any]) -> contextvars.Context | None:
    """A copy of the HTTP request's context variables, for the turn a call starts: the SDK runs handlers
    in its own task group's tasks, which know nothing of the request, so without it the turn's log lines
    and its error chunks would lack the request's id, and its spans would start a trace of their own."""
    request = ctx.request
    context = request.scope.get(CONTEXT) if request is not None else None
    return context.copy() if isinstance(context, contextvars.Context) else None


def build_server(rt: Runtime) -> Server[Any]:
    async def list_tools(ctx: ServerRequestContext[Any, Any],
                         params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=await service.list_tools(rt=rt, user=_caller(ctx).user))

    async def call_tool(ctx: ServerRequestContext[Any, Any],
                        params: types.CallToolRequestParams) -> types.CallToolResult:
        said = 0

        async def progress(text: str) -> None:  # a no-op unless the client sent a progress token
            nonlocal said
            said += len(text)
            await ctx.session.report_progress(float(said), None, text)

        call = service.call_tool(rt=rt, caller=_caller(ctx), name=params.name, arguments=params.arguments,
                                 progress=progress)
        return await asyncio.create_task(call, context=_request_context(ctx))

    return Server("agentloft", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  get_tool_input_schema=lambda name: (service.INPUT_SCHEMA if name.startswith(service.TOOL_PREFIX)
                                                      else None))


class McpServer:
    """The app's MCP server and its session manager, run from start-up to shutdown."""

    def __init__(self, rt: Runtime) -> None:
        self.server = build_server(rt)
        self.manager = StreamableHTTPSessionManager(app=self.server, stateless=True, json_response=False)
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        running = asyncio.Event()

        async def run() -> None:
            async with self.manager.run():
                running.set()
                await self._stop.wait()

        self._task = asyncio.create_task(run(), name="mcp-server")
        waiting = asyncio.create_task(running.wait())
        await asyncio.wait([self._task, waiting], return_when=asyncio.FIRST_COMPLETED)
        waiting.cancel()
        if self._task.done():  # it failed to start: say why now, not at the first request
            self._task.result()

    async def stop(self) -> None:
        """End the manager: requests still open are cancelled (their turns run on, as the module says)."""
        if self._task is None:
            return
        self._stop.set()
        await self._task
        self._task = None
