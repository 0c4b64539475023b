"""Live MCP clients: one per server per worker process, opened on first use, closed when idle.

A chat does not own a connection: every run in this process that calls a server's tools shares the one
client of that server, and a stdio server is one process per worker, not per chat. A connection lives in
a task of its own, because the SDK's client holds anyio task groups that must be entered and left in the
same task; callers use the client from their own tasks while it is open. It closes when no call used it
for ``idle_s`` seconds, when the server's settings change (the next call opens a new one) and at
shutdown. A connection that broke is dropped: it watches its transport's read stream, so a stdio process
that exited (it crashed, it was killed) or a stream that ended takes its connection out of use at once and
the next call starts a fresh one; a call that could not even be sent is tried once more on a fresh
connection, anything else fails with the reason.

HTTP servers are reached through the network guard's transport (``core.netguard``); stdio servers are
started by a :class:`~agentloft.tools.mcp.launch.Launcher` (bubblewrap, as the sandbox user) and spoken to
through :class:`~agentloft.tools.mcp.stdio.StdioTransport`. No message a server sends may be longer than
``max_message_bytes`` (a stdio line; an HTTP answer, or one event of a stream): a longer answer fails its
call, and where the SDK would only say that the connection closed, the connection says why
(:meth:`_Connection.reason`).

``tools/list_changed``: the client opens a ``subscriptions/listen`` stream when the server offers one
(protocol 2026-07-28) and older servers send the notification on their own; either way it reaches
``on_tools_changed(server_id)``, at most one at a time per server.
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, replace
from types import TracebackType
from typing import IO, Any, Self

import anyio
import mcp_types as types
from mcp import Client
from mcp.client import Transport
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from agentloft import __version__
from agentloft.core import netguard
from agentloft.core.tracing import trace_headers_from_meta
from agentloft.tools.mcp.launch import Launcher, SandboxUnavailable, StdioSpec
from agentloft.tools.mcp.repair import NOT_UTF8, RepairingTransport, not_utf8, reparse
from agentloft.tools.mcp.stdio import TOO_LONG, StdioTransport, too_long

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 60.0  # a stdio server may take a while to start (an interpreter, a package cache)
MAX_TOOL_PAGES = 100
STDERR_TAIL = 2000


@dataclass(frozen=True)
class HttpSpec:
    """What an admin configured for a streamable HTTP server."""

    url: str
    headers: tuple[tuple[str, str], ...] = ()
    secret: str | None = None

    def all_headers(self) -> dict[str, str]:
        headers = dict(self.headers)
        if self.secret:
            headers["Authorization"] = f"Bearer {self.secret}"
        return headers


@dataclass(frozen=True)
class Target:
    """A server as the connection manager needs it. Two targets of one server that differ in anything
    (URL, headers, secret, command...) mean the settings changed: the old connection is closed."""

    server_id: str
    slug: str
    spec: HttpSpec | StdioSpec


@dataclass
class Listing:
    """A server's tools and what it says about itself (name, version, instructions). ``too_many``: it
    lists more than ``max_tools``, and ``tools`` holds only the first of them."""

    tools: list[types.Tool]
    info: dict[str, Any]
    too_many: bool = False


class McpUnavailable(Exception):
    """The server could not be reached, started or spoken to; the message says why (for the admin and the
    model alike, so it never carries a header value or the secret)."""


AllowListSource = Callable[[], Awaitable[netguard.AllowList]]
ToolsChanged = Callable[[str], Awaitable[None]]


def describe(exc: BaseException) -> str:
    """A readable reason for a failure somewhere in the SDK's task groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, netguard.NetError | SandboxUnavailable | McpUnavailable):
        return str(exc)
    if isinstance(exc, MCPError) and exc.data in (NOT_UTF8, TOO_LONG):  # said here, not by the server
        return exc.message
    if isinstance(exc, MCPError):
        return f"the MCP server answered with an error: {exc.message}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _unsent(exc: BaseException) -> bool:
    """A failure that means the call never reached the server (the connection was already gone), so it is
    safe to send it again on a new connection."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError)


def _broken(exc: BaseException) -> bool:
    """A failure after which this connection cannot be trusted for the next call."""
    if isinstance(exc, MCPError):
        return exc.code == types.CONNECTION_CLOSED
    return not isinstance(exc, TimeoutError)


def _cut_listing(item: SessionMessage, max_tools: int) -> SessionMessage:
    """A page of a tool listing with more than ``max_tools`` tools, cut to ``max_tools + 1`` before the
    session reads it: enough to tell that the server lists too many (the refresh is then refused), without
    the SDK's checks of every tool, which for 20,000 tools hold the event loop for about a second
    (docs/benchmarks.md)."""
    message = item.message
    if not isinstance(message, types.JSONRPCResponse):
        return item
    tools = message.result.get("tools")
    if not isinstance(tools, list) or len(tools) <= max_tools + 1:
        return item
    cut = message.model_copy(update={"result": {**message.result, "tools": tools[: max_tools + 1]}})
    return replace(item, message=cut)


class _WatchedReads:
    """A transport's read stream that says when it ends: the server's process exited or its stream closed,
    so nothing more will come and the connection must not take another call. It also gives the session a
    stdio line the SDK could not parse, repaired, when half a surrogate pair was all that was wrong, an
    error answer for a call whose answer was not UTF-8 (``tools.mcp.repair``), and a tool listing of more
    than ``max_tools`` cut short (:func:`_cut_listing`)."""

    def __init__(self, inner: Any, on_end: Callable[[], None], max_tools: int) -> None:
        # ``inner`` is the SDK's ``ReadStream``, a protocol that only a private module of the SDK names.
        self._inner = inner
        self._on_end = on_end
        self._max_tools = max_tools

    def __getattr__(self, name: str) -> Any:  # what the SDK reads by duck typing (``last_context``)
        return getattr(self._inner, name)

    async def receive(self) -> SessionMessage | Exception:
        try:
            item = await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._on_end()
            raise
        if isinstance(item, Exception):  # a line the SDK could not parse: half a surrogate pair, not UTF-8?
            return reparse(item) or not_utf8(item) or item
        return _cut_listing(item, self._max_tools)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()


@asynccontextmanager
async def _watched(transport: Transport, on_end: Callable[[], None], max_tools: int) -> AsyncIterator[Any]:
    """The transport, with its read stream watched (:class:`_WatchedReads`)."""
    async with transport as (reads, writes):
        yield _WatchedReads(reads, on_end, max_tools), writes


class _Connection:
    """One open client and the task that holds it."""

    def __init__(self, manager: McpConnections, target: Target) -> None:
        self.manager = manager
        self.target = target
        self.ready: asyncio.Future[Client] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.in_flight = 0
        self.last_used = time.monotonic()
        self.errlog: IO[str] | None = None
        self.stdio: StdioTransport | None = None
        self.http_status: int | None = None  # the last HTTP error status the server answered
        self.too_long = False  # an HTTP answer passed ``max_message_bytes`` (the guard cut it)
        self.task = asyncio.create_task(self._run(), name=f"mcp:{target.slug}")

    async def _transport(self, stack: AsyncExitStack) -> Transport:
        spec = self.target.spec
        if isinstance(spec, HttpSpec):
            allow = await self.manager.allow_list()
            http = await stack.enter_async_context(
                netguard.guarded_client2(allow, headers=spec.all_headers(),
                                         wrap=lambda inner: RepairingTransport(inner, on_error=self._body_failed),
                                         max_body_bytes=self.manager.max_message_bytes))
            http.event_hooks["response"] = [self._record_status]
            http.event_hooks["request"] = [trace_headers_from_meta]  # the server continues the caller's trace
            transport = streamable_http_client(spec.url, http_client=http,
                                               max_sse_event_size=self.manager.max_message_bytes)
            return _watched(transport, self.stop.set, self.manager.max_tools)
        # Kept open past the exit stack (closed in ``_run``): a failed start reads the tail afterwards.
        self.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115
        self.stdio = StdioTransport(self.manager.launcher(spec), errlog=self.errlog,
                                    max_bytes=self.manager.max_message_bytes)
        return _watched(self.stdio.open(), self.stop.set, self.manager.max_tools)

    async def _record_status(self, response: Any) -> None:
        """The SDK reports any non-2xx answer as 'an error response'; keep the status to say which."""
        if response.status_code >= 400:
            self.http_status = response.status_code

    def _body_failed(self, exc: Exception) -> None:
        if isinstance(exc, netguard.TooLarge):
            self.too_long = True

    def reason(self) -> str | None:
        """Why the connection failed, when this side knows better than the SDK's error: the stdio
        transport ended it, an HTTP answer was too long, or the server answered with an error status."""
        if self.stdio is not None and self.stdio.failure:
            return self.stdio.failure
        if self.too_long:
            return too_long(self.manager.max_message_bytes)
        status = self.http_status
        if status is None:
            return None
        hint = " (is the secret or a header wrong?)" if status in (401, 403) else ""
        return f"the MCP server answered HTTP {status}{hint}"

    def stderr_tail(self) -> str:
        """The end of a stdio server's error output, to say why it did not start."""
        if self.errlog is None:
            return ""
        try:
            self.errlog.flush()
            self.errlog.seek(0)
            return self.errlog.read()[-STDERR_TAIL:].strip()
        except (OSError, ValueError):
            return ""

    async def _run(self) -> None:
        try:
            async with AsyncExitStack() as stack:
                transport = await self._transport(stack)
                client = Client(transport, message_handler=self._on_message, cache=None,
                                client_info=types.Implementation(name="agentloft", version=__version__))
                await stack.enter_async_context(client)
                self.ready.set_result(client)
                async with anyio.create_task_group() as tg:
                    if _listens(client):
                        tg.start_soon(self._listen, client)
                    await self._wait_until_idle()
                    # From here on the connection is closing (its process may take seconds to exit): a new
                    # call must get a fresh one, not this one (``McpConnections._connection``).
                    self.stop.set()
                    tg.cancel_scope.cancel()
        except Exception as exc:
            self._failed(exc)
        except BaseException as exc:  # cancelled: the manager is shutting down
            self._failed(exc)
            raise
        finally:
            if self.errlog is not None:
                self.errlog.close()
            self.manager.forget(self)

    def _failed(self, exc: BaseException) -> None:
        if self.ready.done():
            log.info("MCP server %s: connection ended: %s", self.target.slug, describe(exc))
            return
        reason = self.reason() or describe(exc)
        tail = self.stderr_tail()
        self.ready.set_exception(McpUnavailable(f"{reason} (its error output: {tail})" if tail else reason))

    async def _wait_until_idle(self) -> None:
        idle_s = self.manager.idle_s
        while not self.stop.is_set():
            left = idle_s - (time.monotonic() - self.last_used)
            if self.in_flight == 0 and left <= 0:
                return
            with anyio.move_on_after(max(left, 0.05) if self.in_flight == 0 else idle_s):
                await self.stop.wait()

    async def _listen(self, client: Client) -> None:
        """Keep a ``subscriptions/listen`` stream open; its events arrive through ``_on_message`` too."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    pass
        except Exception as exc:
            log.info("MCP server %s: no tool-list subscription (%s)", self.target.slug, describe(exc))

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.manager.tools_changed(self.target.server_id)
        await anyio.lowlevel.checkpoint()

    def use(self) -> None:
        self.in_flight += 1
        self.last_used = time.monotonic()

    def release(self) -> None:
        self.in_flight -= 1
        self.last_used = time.monotonic()


def _server_info(client: Client) -> dict[str, Any]:
    info = client.server_info
    out = {"name": info.name if info else None, "version": info.version if info else None,
           "instructions": client.instructions, "protocolVersion": client.protocol_version}
    return {k: v for k, v in out.items() if v}


def _listens(client: Client) -> bool:
    tools = client.server_capabilities.tools
    return bool(tools and tools.list_changed) and client.protocol_version >= "2026-07-28"


class McpConnections:
    """The connections of one worker process, by server id."""

    def __init__(
        self, *, idle_s: float, launcher: Launcher, allow_list: AllowListSource,
        max_message_bytes: int, max_tools: int, on_tools_changed: ToolsChanged | None = None,
    ) -> None:
        self.idle_s = idle_s
        self.max_message_bytes = max_message_bytes
        self.max_tools = max_tools
        self.launcher = launcher
        self.allow_list = allow_list
        self.on_tools_changed = on_tools_changed
        self._conns: dict[str, _Connection] = {}
        self._refreshing: set[str] = set()
        self._background: set[asyncio.Task[None]] = set()

    def open_servers(self) -> list[str]:
        """Ids of the servers this process holds a connection to (tests, status)."""
        return [sid for sid, conn in self._conns.items() if not conn.task.done()]

    def _connection(self, target: Target) -> _Connection:
        conn = self._conns.get(target.server_id)
        if conn is not None and (conn.target != target or conn.task.done() or conn.stop.is_set()):
            conn.stop.set()
            conn = None
        if conn is None:
            conn = _Connection(self, target)
            self._conns[target.server_id] = conn
        return conn

    def forget(self, conn: _Connection) -> None:
        if self._conns.get(conn.target.server_id) is conn:
            del self._conns[conn.target.server_id]

    def drop(self, server_id: str) -> None:
        """Close the server's connection (its settings changed, it was disabled or deleted)."""
        conn = self._conns.pop(server_id, None)
        if conn is not None:
            conn.stop.set()

    @asynccontextmanager
    async def client(self, target: Target) -> AsyncIterator[Client]:
        """The server's open client, for the length of one use."""
        conn = self._connection(target)
        conn.use()
        conn.http_status, conn.too_long = None, False
        try:
            try:
                client = await asyncio.wait_for(asyncio.shield(conn.ready), CONNECT_TIMEOUT_S)
            except TimeoutError as exc:
                conn.stop.set()
                raise McpUnavailable(f"the MCP server did not answer within {CONNECT_TIMEOUT_S:g} s") from exc
            yield client
        except McpUnavailable:
            raise
        except Exception as exc:
            if _broken(exc):
                conn.stop.set()
            reason = conn.reason() if isinstance(exc, MCPError) else None
            if reason:
                raise McpUnavailable(reason) from exc
            raise
        finally:
            conn.release()

    async def call_tool(
        self, target: Target, name: str, arguments: dict[str, Any], *, timeout_s: float | None = None
    ) -> types.CallToolResult:
        """Call one tool. Raises :class:`McpUnavailable` when the server cannot be reached and ``MCPError``
        when it refuses the request; a tool's own failure is a result with ``is_error``."""
        for attempt in (1, 2):
            try:
                async with self.client(target) as client:
                    return await client.call_tool(name, arguments, read_timeout_seconds=timeout_s)
            except McpUnavailable:
                raise
            except MCPError:
                raise
            except Exception as exc:
                if attempt == 1 and _unsent(exc):
                    continue
                raise McpUnavailable(describe(exc)) from exc
        raise AssertionError("unreachable")

    async def list_tools(self, target: Target) -> Listing:
        """Every tool the server lists (all pages) and the server's own description; no further page is
        asked for once there are more than ``max_tools`` (``Listing.too_many``)."""
        tools: list[types.Tool] = []
        try:
            async with self.client(target) as client:
                info = _server_info(client)
                cursor: str | None = None
                for _ in range(MAX_TOOL_PAGES):
                    page = await client.list_tools(cursor=cursor, cache_mode="bypass")
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None or len(tools) > self.max_tools:
                        break
        except (McpUnavailable, MCPError):
            raise
        except Exception as exc:
            raise McpUnavailable(describe(exc)) from exc
        return Listing(tools=tools[: self.max_tools], info=info, too_many=len(tools) > self.max_tools)

    def tools_changed(self, server_id: str) -> None:
        """The server says its tool list changed: refresh it once (one refresh at a time per server)."""
        if self.on_tools_changed is None or server_id in self._refreshing:
            return
        self._refreshing.add(server_id)

        async def refresh() -> None:
            try:
                assert self.on_tools_changed is not None
                await self.on_tools_changed(server_id)
            except Exception:
                log.exception("refreshing the tools of MCP server %s failed", server_id)
            finally:
                self._refreshing.discard(server_id)

        task = asyncio.create_task(refresh())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def aclose(self) -> None:
        conns = list(self._conns.values())
        self._conns.clear()
        for conn in conns:
            conn.stop.set()
        tasks = [c.task for c in conns] + list(self._background)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=10)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
