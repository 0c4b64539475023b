"""A client that reads HTTP responses as bytes, for benchmarks whose client shares the server's cores.

httpx spends tens of microseconds of CPU on every piece of a streamed response (its transport, h11,
anyio); on a 2-core machine that CPU is taken from the server being measured, and 50 clients reading
500-chunk replies spend more of it than the server's relay does. This client writes a request on a kept
connection and reads the response in pieces of up to 64 KiB, looking only for a marker (the first text)
and for the end of a chunked body: what a floor of "the bytes arrive" needs, at a few microseconds a
read. Both the floor (the fake model read directly) and the chat are read with it.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

_END = b"\r\n0\r\n\r\n"  # the last chunk of a chunked body (SSE payloads never hold a bare CR)
_READ = 65536


@dataclass
class Reply:
    status: int
    first: float  # seconds to the first marker, 0 if it never came
    total: float  # seconds to the end of the body
    headers: dict[str, str]
    body_tail: bytes


class FailedReply(RuntimeError):
    """The server answered with an error status or an error chunk (a failed chat would flatter figures)."""


class ByteClient:
    """Kept connections to one ``host:port``; any number of requests at once (one connection each)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self._idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []

    async def _connection(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        while self._idle:
            reader, writer = self._idle.pop()
            if not writer.is_closing() and not reader.at_eof():
                return reader, writer
        return await asyncio.open_connection(self.host, self.port, limit=_READ)

    async def post(self, path: str, body: bytes, headers: dict[str, str], marker: bytes = b"",
                   failure: bytes | None = None) -> Reply:
        """POST ``body`` and read the whole response; time the first ``marker`` and the end."""
        reader, writer = await self._connection()
        lines = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        head = (f"POST {path} HTTP/1.1\r\nHost: {self.host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n{lines}\r\n")
        started = time.perf_counter()
        writer.write(head.encode() + body)
        reply, reusable = await _read_response(reader, started, marker, failure)
        if reusable:
            self._idle.append((reader, writer))
        else:
            writer.close()
        if reply.status >= 400:
            raise FailedReply(f"{path} answered {reply.status}: {reply.body_tail[-300:]!r}")
        return reply

    async def aclose(self) -> None:
        for _, writer in self._idle:
            writer.close()
        self._idle.clear()


async def _read_response(reader: asyncio.StreamReader, started: float, marker: bytes,
                         failure: bytes | None) -> tuple[Reply, bool]:
    raw_head = await reader.readuntil(b"\r\n\r\n")
    status_line, *header_lines = raw_head.decode("latin-1").split("\r\n")
    status = int(status_line.split(" ", 2)[1])
    headers = {}
    for line in header_lines:
        name, sep, value = line.partition(":")
        if sep:
            headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        body = await reader.readexactly(int(headers["content-length"]))
        first = time.perf_counter() - started if marker and marker in body else 0.0
        return Reply(status, first, time.perf_counter() - started, headers, body[-4096:]), True
    first = 0.0
    tail = b""
    while True:
        data = await reader.read(_READ)
        if not data:
            return Reply(status, first, time.perf_counter() - started, headers, tail), False
        window = tail + data
        if not first and marker and marker in window:
            first = time.perf_counter() - started
        if failure is not None and failure in window:
            raise FailedReply(f"error chunk in the reply: {window[-300:]!r}")
        tail = window[-512:]
        if tail.endswith(_END) or window == _END[2:]:
            return Reply(status, first, time.perf_counter() - started, headers, tail), True
