"""A small HTTP/1.1 transport for plain-``http`` model endpoints (local servers: Ollama, vLLM, LM Studio).

httpx reads a response through httpcore, h11 and anyio, and hands over one network piece per await:
about 50 us of CPU per streamed chunk, whatever the backlog. This transport speaks HTTP/1.1 over asyncio
streams with the C parser ``httptools`` and reads up to 64 KiB at a time, so a fast stream costs per
read rather than per chunk. It plugs in under httpx (``AsyncClient(transport=...)``): the requests and
their retries stay with the client above it (``chat.lean_openai``); timeouts and connection failures
surface as the usual httpx exceptions. ``https`` and anything unusual go to the regular httpx transport.
Connections are kept alive and reused, including one whose streamed response was closed a moment
before its end (``drain``).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

import httptools
import httpx

READ_SIZE = 65536
# Idle connections kept per model server. As many as the chats that may stream at once: closing the
# surplus after a burst and opening new ones for the next meant, on loopback at 100 concurrent chats,
# new connections refused while a busy server had not yet closed its side of the old ones.
MAX_IDLE = 200
DRAIN_S = 1.0  # how long the rest of a response closed early may take to arrive before its connection is closed
DRAIN_READS = 16  # ... and how many reads


class _Parser:
    """httptools callbacks collected into plain fields."""

    def __init__(self) -> None:
        self.headers: list[tuple[bytes, bytes]] = []
        self.body: deque[bytes] = deque()
        self.head_done = False
        self.complete = False
        self.keep_alive = False
        self.parser = httptools.HttpResponseParser(self)

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name, value))

    def on_headers_complete(self) -> None:
        self.head_done = True
        # asked here: once the message is complete the parser has reset for the next one and says no
        self.keep_alive = self.parser.should_keep_alive()

    def on_body(self, body: bytes) -> None:
        self.body.append(body)

    def on_message_complete(self) -> None:
        self.complete = True

    def feed(self, data: bytes) -> None:
        self.parser.feed_data(data)


class _Connection:
    def __init__(self, key: tuple[str, int], reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.key, self.reader, self.writer = key, reader, writer

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()


class _Body(httpx.AsyncByteStream):
    def __init__(self, transport: LeanTransport, conn: _Connection, state: _Parser, read_timeout: float | None,
                 request: httpx.Request) -> None:
        self._transport, self._conn, self._state = transport, conn, state
        self._timeout, self._request = read_timeout, request
        self._closed = False

    async def __aiter__(self) -> AsyncIterator[bytes]:
        state = self._state
        while True:
            if state.body:
                data = b"".join(state.body)
                state.body.clear()
                yield data
            if state.complete:
                return
            chunk = await _read(self._conn, self._timeout, self._request)
            if not chunk:
                raise httpx.RemoteProtocolError("the model server closed the connection mid-response",
                                                request=self._request)
            try:
                state.feed(chunk)
            except httptools.HttpParserError as exc:
                raise httpx.RemoteProtocolError(f"malformed HTTP from the model server: {exc}",
                                                request=self._request) from exc

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._state.complete:
            self._transport.release(self._conn, self._state)
        else:
            self._transport.drain(self._conn, self._state)


async def _read(conn: _Connection, limit_s: float | None, request: httpx.Request) -> bytes:
    try:
        async with asyncio.timeout(limit_s):  # not ``wait_for``: that starts a task per read
            return await conn.reader.read(READ_SIZE)
    except TimeoutError as exc:
        conn.close()
        raise httpx.ReadTimeout("the model server did not send data in time", request=request) from exc
    except OSError as exc:
        conn.close()
        raise httpx.ReadError(str(exc), request=request) from exc


class LeanTransport(httpx.AsyncBaseTransport):
    def __init__(self, fallback: httpx.AsyncBaseTransport, max_idle: int = MAX_IDLE) -> None:
        self._fallback = fallback
        self._idle: dict[tuple[str, int], list[_Connection]] = {}
        self._max_idle = max_idle
        self._draining: set[asyncio.Task[None]] = set()

    def release(self, conn: _Connection, state: _Parser) -> None:
        """Keep a connection whose response was read to its end, unless the server said to close it."""
        idle = self._idle.setdefault(conn.key, [])
        if state.keep_alive and len(idle) < self._max_idle and not conn.writer.is_closing():
            idle.append(conn)
        else:
            conn.close()

    def drain(self, conn: _Connection, state: _Parser) -> None:
        """A response closed before its end — usually right after a stream's ``[DONE]``, whose terminating
        chunk is still on its way — is read to its end in the background and its connection kept; one
        that goes on longer (a stopped run) is closed, which also tells the server to stop generating."""
        task = asyncio.get_running_loop().create_task(self._drain(conn, state))
        self._draining.add(task)
        task.add_done_callback(self._draining.discard)

    async def _drain(self, conn: _Connection, state: _Parser) -> None:
        kept = False
        try:
            async with asyncio.timeout(DRAIN_S):
                for _ in range(DRAIN_READS):
                    if state.complete:
                        break
                    chunk = await conn.reader.read(READ_SIZE)
                    if not chunk:
                        break
                    state.feed(chunk)
                    state.body.clear()
            if state.complete:
                self.release(conn, state)
                kept = True
        except (TimeoutError, OSError, httptools.HttpParserError):
            pass
        finally:
            if not kept:  # also when the transport closes and cancels the drain
                conn.close()

    async def _connect(self, key: tuple[str, int], limit_s: float | None, request: httpx.Request) -> _Connection:
        try:
            async with asyncio.timeout(limit_s):
                reader, writer = await asyncio.open_connection(*key, limit=READ_SIZE * 4)
        except TimeoutError as exc:
            raise httpx.ConnectTimeout("connecting to the model server timed out", request=request) from exc
        except OSError as exc:
            raise httpx.ConnectError(f"{key[0]}:{key[1]}: {exc or 'connection failed'}", request=request) from exc
        return _Connection(key, reader, writer)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        if url.scheme != "http" or url.host is None:
            return await self._fallback.handle_async_request(request)
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        key = (url.host, url.port or 80)
        head = _request_head(request)
        body = await request.aread()
        idle = self._idle.get(key) or []
        while idle:  # a pooled connection the server may have closed since: fall back to a fresh one
            conn = idle.pop()
            if conn.writer.is_closing() or conn.reader.at_eof():
                conn.close()
                continue
            response = await self._exchange(conn, head, body, timeouts, request, reused=True)
            if response is not None:
                return response
        conn = await self._connect(key, timeouts.get("connect"), request)
        response = await self._exchange(conn, head, body, timeouts, request, reused=False)
        assert response is not None
        return response

    async def _exchange(self, conn: _Connection, head: bytes, body: bytes, timeouts: dict[str, Any],
                        request: httpx.Request, *, reused: bool) -> httpx.Response | None:
        state = _Parser()
        try:
            conn.writer.write(head + body)
            await conn.writer.drain()
            while not state.head_done:
                chunk = await _read(conn, timeouts.get("read"), request)
                if not chunk:
                    conn.close()
                    if reused:
                        return None
                    raise httpx.RemoteProtocolError("the model server closed the connection", request=request)
                state.feed(chunk)
        except (ConnectionError, httpx.ReadError):
            conn.close()
            if reused:
                return None
            raise
        except httptools.HttpParserError as exc:
            conn.close()
            raise httpx.RemoteProtocolError(f"malformed HTTP from the model server: {exc}",
                                            request=request) from exc
        return httpx.Response(
            status_code=state.parser.get_status_code(),
            headers=state.headers,
            stream=_Body(self, conn, state, timeouts.get("read"), request),
            extensions={"http_version": b"HTTP/1.1"},
            request=request,
        )

    async def aclose(self) -> None:
        for task in list(self._draining):
            task.cancel()
        for conns in self._idle.values():
            for conn in conns:
                conn.close()
        self._idle.clear()
        await self._fallback.aclose()


def _request_head(request: httpx.Request) -> bytes:
    target = request.url.raw_path or b"/"
    lines = [request.method.encode() + b" " + target + b" HTTP/1.1"]
    headers = request.headers.raw
    names = {name.lower() for name, _ in headers}
    if b"host" not in names:
        lines.append(b"Host: " + request.url.netloc)
    lines.extend(name + b": " + value for name, value in headers)
    return b"\r\n".join(lines) + b"\r\n\r\n"
