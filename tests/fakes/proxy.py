"""A forward HTTP proxy for tests: it records what clients ask it for and forwards plain-http requests.

A plain-``http`` request comes in absolute form (``POST http://host:port/path HTTP/1.1``); the proxy
records the request line, connects to that host and pipes bytes both ways until either side closes (the
upstream, uvicorn, accepts the absolute form as is). A ``CONNECT host:port`` (how clients reach ``https``
through a proxy) is recorded and refused with ``403``: proving that the client came to the proxy is the
point, a TLS tunnel to a made-up host is not.

Runs its own event loop in a daemon thread: ``ForwardProxy().start()``; ``.url`` goes into ``HTTP_PROXY``.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from urllib.parse import urlsplit

from tests.fakes.openai_server import free_port


class ForwardProxy:
    def __init__(self) -> None:
        self.port = free_port()
        self.requests: list[str] = []  # request lines, in order ("POST http://…", "CONNECT host:443")
        self._loop = asyncio.new_event_loop()
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ForwardProxy:
        self._thread.start()
        if not self._started.wait(10):
            raise RuntimeError("proxy did not start")
        return self

    def stop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", self.port))
        self._started.set()
        self._loop.run_forever()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        self.requests.append(line)
        method, target, _ = line.split(" ", 2)
        if method == "CONNECT":
            writer.write(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        parts = urlsplit(target)
        try:
            up_reader, up_writer = await asyncio.open_connection(parts.hostname, parts.port or 80)
        except OSError:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            writer.close()
            return
        up_writer.write(head)
        await asyncio.gather(_pipe(reader, up_writer, self.requests), _pipe(up_reader, writer, None))


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, lines: list[str] | None) -> None:
    """Copy until EOF; on the client side, also record the request lines of later requests (keep-alive)."""
    try:
        while data := await reader.read(65536):
            if lines is not None:
                for start in (b"GET http", b"POST http"):
                    if data.startswith(start):
                        lines.append(data.split(b"\r\n", 1)[0].decode("latin-1"))
            writer.write(data)
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        with contextlib.suppress(Exception):
            writer.close()
