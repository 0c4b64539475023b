"""The network of stdio MCP servers that may use it: a namespace with only loopback, and a proxy that obeys
the network guard.

Sharing the host's network namespace let such a server reach what the guard keeps every tool from:
``127.0.0.1`` of the host (this server, Redis, PostgreSQL), the LAN, the cloud's metadata address. So these
servers run in a network namespace of their own (one per worker process, shared by its networked servers)
that has nothing but a loopback interface, and on that loopback a port this process serves: an HTTP proxy
that speaks ``CONNECT host:port`` (any TLS or other stream) and plain ``GET http://…`` requests. Each
connection's target passes :func:`~agentloft.core.netguard.check_target` with the admin's allow-list at
that moment, and the proxy connects to the very address that was checked. The servers learn of the proxy
through ``HTTP_PROXY``/``HTTPS_PROXY`` (both cases), ``ALL_PROXY`` and ``NODE_USE_ENV_PROXY=1`` (node 22.21+
and 24.5+; an older node's ``fetch`` ignores proxies, as do clients that never read them): a client that
does not use the proxy reaches nothing at all. Only what goes through HTTP proxies works: a database
driver's own protocol does not.

How the port gets into the namespace: a thread of this process leaves the host's namespace for a new one
(``unshare``), brings its loopback up and opens the listening socket there, then ends; the socket stays in
that namespace, and the event loop, still in the host's namespace, accepts on it and connects out. The
sandbox joins the namespace through ``nsenter --net=/proc/<this pid>/fd/<fd>``. No second program runs
inside the sandbox, nothing is forwarded by a helper, and the host's network stays out of reach.

Why our own small proxy rather than a proxy library: the check is an async call against the admin's live
allow-list, made per connection inside this event loop, and all that is needed is CONNECT and one
absolute-form request per connection; the proxy servers on PyPI run their own loops or processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import fcntl
import logging
import os
import socket
import struct
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx

from agentloft.core import netguard
from agentloft.tools.sandbox import SandboxUnavailable

log = logging.getLogger(__name__)

AllowListSource = Callable[[], Awaitable[netguard.AllowList]]

CLONE_NEWNET = 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1
HEAD_LIMIT = 64 * 1024  # a request head longer than this is refused
HEAD_TIMEOUT_S = 30.0
MAX_TUNNELS = 256  # connections open at once; more wait for one to end
HOP_HEADERS = (b"proxy-connection", b"proxy-authorization", b"connection", b"keep-alive")


@dataclass(frozen=True)
class Namespace:
    """Where a networked server joins (``nsenter --net=<path>``) and the proxy it is told about."""

    path: str
    proxy: str

    def environment(self) -> dict[str, str]:
        names = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY")
        return {**{n: self.proxy for n in names}, **{n.lower(): self.proxy for n in names},
                "NO_PROXY": "", "no_proxy": "", "NODE_USE_ENV_PROXY": "1"}


class Refused(Exception):
    """A request the proxy answers itself (status and a reason in plain text), sending nothing on."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


@dataclass
class Egress:
    """This process's network namespace for stdio servers and its proxy, made on first use."""

    allow_list: AllowListSource
    _namespace: Namespace | None = None
    _fd: int | None = None
    _server: asyncio.Server | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set[asyncio.Task[None]])
    _slots: asyncio.Semaphore = field(default_factory=lambda: asyncio.Semaphore(MAX_TUNNELS))

    def namespace(self) -> Namespace:
        """The namespace, made (and its proxy started on this event loop) the first time."""
        if self._namespace is None:
            self._fd, listener = _new_namespace()
            port = listener.getsockname()[1]
            self._namespace = Namespace(f"/proc/{os.getpid()}/fd/{self._fd}", f"http://127.0.0.1:{port}")
            self._spawn(self._serve(listener))
        return self._namespace

    def _spawn(self, work: Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, listener: socket.socket) -> None:
        self._server = await asyncio.start_server(self._client, sock=listener, limit=HEAD_LIMIT)

    async def aclose(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._fd is not None:
            os.close(self._fd)
        self._namespace = self._fd = self._server = None

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:  # closed with the rest at shutdown
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
        try:
            async with self._slots:
                await self._proxy(reader, writer)
        except Refused as exc:
            body = str(exc).encode()
            writer.write(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
                         b"Connection: close\r\n\r\n%s" % (exc.status, _PHRASES[exc.status], len(body), body))
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError):
            pass
        finally:
            with contextlib.suppress(OSError):
                writer.close()

    async def _proxy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await _read_head(reader)
        method, target, rest = _request_line(head)
        if method == b"CONNECT":
            host, port = _host_port(target.decode("latin-1"))
            upstream = await self._open("https", host, port)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            url = _absolute_url(target)
            upstream = await self._open(url.scheme, url.host, url.port or 80)
            upstream[1].write(b"%s %s %s" % (method, url.raw_path, _forwarded(rest)))
        try:
            await _splice(reader, writer, *upstream)
        finally:
            with contextlib.suppress(OSError):
                upstream[1].close()

    async def _open(self, scheme: str, host: str, port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        try:
            ip = await netguard.check_target(scheme, host, port, await self.allow_list())
        except netguard.Blocked as exc:
            log.info("stdio MCP egress refused %s:%s: %s", host, port, exc)
            raise Refused(403, str(exc)) from exc
        except netguard.NetError as exc:
            raise Refused(502, str(exc)) from exc
        try:
            async with asyncio.timeout(netguard.STREAM_CONNECT_TIMEOUT_S):
                return await asyncio.open_connection(str(ip), port)
        except (OSError, TimeoutError) as exc:
            raise Refused(502, f"cannot connect to {host}:{port}: {exc or type(exc).__name__}") from exc


_PHRASES = {400: b"Bad Request", 403: b"Forbidden", 502: b"Bad Gateway"}


async def _read_head(reader: asyncio.StreamReader) -> bytes:
    try:
        async with asyncio.timeout(HEAD_TIMEOUT_S):
            return await reader.readuntil(b"\r\n\r\n")
    except asyncio.LimitOverrunError as exc:
        raise Refused(400, f"the request head is longer than {HEAD_LIMIT} bytes") from exc


def _request_line(head: bytes) -> tuple[bytes, bytes, bytes]:
    """Method, target, and everything after the target (version, headers, the blank line)."""
    line, _, _ = head.partition(b"\r\n")
    parts = line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        raise Refused(400, "not an HTTP/1.x proxy request")
    return parts[0], parts[1], head[len(parts[0]) + len(parts[1]) + 2:]


def _host_port(authority: str) -> tuple[str, int]:
    host, sep, port = authority.rpartition(":")
    if not sep or not port.isdigit() or not host:
        raise Refused(400, f"CONNECT needs host:port, not {authority!r}")
    return host.strip("[]"), int(port)


def _absolute_url(target: bytes) -> httpx.URL:
    try:
        url = httpx.URL(target.decode("latin-1"))
    except (httpx.InvalidURL, ValueError) as exc:
        raise Refused(400, f"not a URL: {exc}") from exc
    if not url.is_absolute_url:
        raise Refused(400, "a proxy request names the whole URL (http://host/path)")
    if url.scheme != "http":
        raise Refused(400, f"send {url.scheme} through CONNECT, not as a plain request")
    return url


def _forwarded(rest: bytes) -> bytes:
    """The version and headers to send on: less the proxy's own and hop-by-hop ones, one request only
    (``Connection: close``), so a client cannot send its next request, meant for another host, down the
    connection this one was checked for."""
    version, _, headers = rest.partition(b"\r\n")
    kept = [h for h in headers.split(b"\r\n") if h and h.split(b":", 1)[0].strip().lower() not in HOP_HEADERS]
    return b"\r\n".join([version, *kept, b"Connection: close", b"", b""])


async def _splice(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter,
                  upstream_r: asyncio.StreamReader, upstream_w: asyncio.StreamWriter) -> None:
    """Copy both ways until both sides have ended (a read idle for ``STREAM_READ_TIMEOUT_S`` ends one)."""
    await asyncio.gather(_copy(client_r, upstream_w), _copy(upstream_r, client_w))


async def _copy(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            async with asyncio.timeout(netguard.STREAM_READ_TIMEOUT_S):
                data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (OSError, TimeoutError):
        pass
    with contextlib.suppress(OSError):
        if writer.can_write_eof():
            writer.write_eof()


def _new_namespace() -> tuple[int, socket.socket]:
    """A new network namespace (its fd) with loopback up and a listening socket on it, made on a thread of
    its own: ``unshare`` moves only the calling thread, and the event loop's must stay in the host's."""
    made: list[tuple[int, socket.socket]] = []
    failed: list[OSError] = []

    def make() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            if libc.unshare(CLONE_NEWNET) != 0:
                raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
            _loopback_up()
            listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            listener.bind(("127.0.0.1", 0))
            listener.listen(128)
            listener.setblocking(False)
            made.append((os.open("/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC), listener))
        except OSError as exc:
            failed.append(exc)

    thread = threading.Thread(target=make, name="mcp-netns")
    thread.start()
    thread.join()
    if failed:
        raise SandboxUnavailable(
            "a stdio MCP server that may use the network runs in a network namespace of its own behind the "
            f"network guard's proxy, and this server could not make one ({failed[0].strerror}); it must run "
            "as root") from failed[0]
    return made[0]


def _loopback_up() -> None:
    """``ip link set lo up`` in the calling thread's network namespace (a new one starts with it down)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH22x", b"lo", 0)
        flags = struct.unpack("16sH22x", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sH22x", b"lo", flags | IFF_UP))
