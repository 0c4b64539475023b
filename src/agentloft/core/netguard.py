"""The one way the platform opens a URL: an HTTP request that cannot be pointed at the inside of the network.

A model can be talked into fetching ``http://169.254.169.254/`` (cloud credentials), ``http://localhost:6379``
or an admin page on the LAN, and an admin's A2A agent, MCP server or sign-in provider may name such a
host too. So every outbound request of tools, A2A, MCP and sign-in goes through :func:`request` or one of
the transports below, which

- resolves the host itself and refuses loopback, private, link-local, multicast, reserved, unspecified
  and other non-global addresses unless the admin allowed them (setting ``allowed_internal_hosts``:
  host names, ``*.suffix`` patterns, IPs and CIDRs) — the check happens before any connection is made;
- connects to the very address it checked (the URL is rewritten to the IP while the ``Host`` header and
  TLS SNI/certificate check keep the name), so a DNS answer cannot change between check and connect;
- follows redirects itself, checking every hop the same way (at most ``max_redirects``);
- streams the body and stops at ``max_bytes``, and bounds the whole exchange by ``timeout_s``.

Refusals and failures are :class:`NetError` whose message is meant for the model and the user
("blocked: 10.0.0.1 is a private address").

It lives in ``core`` because tools, A2A, MCP and sign-in all use it, and it knows none of them: each caller
passes the :class:`AllowList` in (the admin's setting, read by ``system.service.internal_allow_list``; a tool
adds what its caller passed down, ``tools.net``), and a caller that wants a tool's failed result makes it
(``tools.net.failure``).

The check-and-pin step is an HTTP transport (:class:`GuardedTransport` for httpx, :class:`GuardedTransport2`
for httpx2), so clients this module does not drive go through the same guard: the A2A client (a2a-sdk,
on httpx) and the MCP client (mcp, on httpx2) get one with :func:`guarded_client` / :func:`guarded_client2`.
Those clients hold long-lived event streams, so their limits differ from :func:`request`'s: no bound on a
whole exchange, a bound on each read (``STREAM_READ_TIMEOUT_S``), and a size cap on every response that is
not an event stream (``STREAM_MAX_BODY_BYTES``). An event stream's events are bounded by its reader (the
MCP SDK's client takes a size for each event), or, for a reader that reads a line and an event whole
before it looks at them (a2a-sdk's client), by the transport (``max_event_bytes``).
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import ssl
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import httpx
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_MAX_BYTES = 2_000_000
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_REDIRECTS = 5
USER_AGENT = "agentloft-tools/0.1"
REDIRECT_CODES = {301, 302, 303, 307, 308}
# Limits of the clients that hold event streams open (MCP, A2A): connecting and sending are quick or fail,
# a stream may stay silent between events for minutes, a plain (non-stream) answer is capped in size.
STREAM_CONNECT_TIMEOUT_S = 10.0
STREAM_WRITE_TIMEOUT_S = 30.0
STREAM_READ_TIMEOUT_S = 300.0
STREAM_MAX_BODY_BYTES = 16_000_000
# A bound for one server-sent event, for clients given ``max_event_bytes``: the MCP SDK client's own
# default for each event (``mcp.client.streamable_http.DEFAULT_MAX_SSE_EVENT_SIZE``).
STREAM_MAX_EVENT_BYTES = 1024 * 1024
STREAM_MAX_CONNECTIONS = 50
# Headers that may follow a redirect to another origin; everything else (credentials) stays behind.
CROSS_ORIGIN_SAFE_HEADERS = {"accept", "accept-language", "user-agent", "content-type"}


class NetError(Exception):
    """A request that was refused or failed; the message is shown to the model as the tool's error."""


class Blocked(NetError):
    """The target address is internal and not allowed."""


class TooLarge(NetError):
    """The response is bigger than the caller accepts."""


class NetTimeout(NetError):
    """The exchange (all redirects included) took longer than allowed."""


NAT64 = ipaddress.ip_network("64:ff9b::/96")


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, NAT64, 6to4, Teredo), if any."""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    if ip.sixtofour is not None:
        return ip.sixtofour
    return ip.teredo[1] if ip.teredo else None


def classify(ip: IPAddress) -> str | None:
    """Why an address is internal (``"a private address"``), or None when it is public. An IPv6 address
    that embeds an IPv4 one is judged by that IPv4 address, so ``::ffff:127.0.0.1`` is loopback."""
    if isinstance(ip, ipaddress.IPv6Address) and (v4 := _embedded_ipv4(ip)) is not None:
        return classify(v4)
    checks = (
        (ip.is_unspecified, "an unspecified address"),
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_reserved, "a reserved address"),
        (ip.is_private, "a private address"),
        (not ip.is_global, "a non-public address"),
    )
    return next((reason for hit, reason in checks if hit), None)


@dataclass(frozen=True)
class AllowList:
    """Internal hosts the admin opened: exact names, ``*.suffix`` names, IPs and CIDRs."""

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = ()

    @classmethod
    def parse(cls, entries: Iterable[str]) -> AllowList:
        names: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for raw in entries:
            entry = raw.strip().lower().strip("[]")
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                if entry.startswith("*."):
                    suffixes.append(entry[1:])
                else:
                    names.add(entry.rstrip("."))
        return cls(frozenset(names), tuple(suffixes), tuple(networks))

    def allows_name(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        return host in self.names or any(host.endswith(s) for s in self.suffixes)

    def allows_ip(self, ip: IPAddress) -> bool:
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        return any(ip in net or (mapped is not None and mapped in net) for net in self.networks)


def domain_matches(host: str, domains: Iterable[str]) -> bool:
    """``host`` is one of ``domains`` or a subdomain of one (``docs.python.org`` matches ``python.org``)."""
    host = host.lower().rstrip(".")
    for d in domains:
        d = d.strip().lower().rstrip(".").removeprefix("*.")
        if d and (host == d or host.endswith("." + d)):
            return True
    return False


@dataclass
class GuardedResponse:
    url: str  # the final URL, by name (not the pinned IP)
    status_code: int
    headers: httpx.Headers
    content: bytes
    truncated: bool = False
    redirects: list[str] = field(default_factory=list)
    encoding: str | None = None

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def text(self) -> str:
        try:
            return self.content.decode(self.encoding or "utf-8", errors="replace")
        except LookupError:
            return self.content.decode("utf-8", errors="replace")

    def json_body(self) -> Any:
        """The body parsed as JSON (raises ValueError when it is not JSON)."""
        return json.loads(self.content)

    @property
    def ok(self) -> bool:
        return 200 <= self.status_code < 300


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    """Loading the CA bundle costs tens of milliseconds; do it once per process."""
    return httpx.create_ssl_context()


async def _resolve(host: str, port: int) -> list[IPAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise NetError(f"cannot resolve host {host}: {exc.strerror or exc}") from exc
    seen: list[IPAddress] = []
    for info in infos:
        ip = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if ip not in seen:
            seen.append(ip)
    if not seen:
        raise NetError(f"cannot resolve host {host}")
    return seen


async def check_target(
    scheme: str, host: str, port: int | None, allow: AllowList, allowed_domains: Iterable[str] | None = None
) -> IPAddress:
    """Refuse the target or return the address to connect to. Nothing is sent before this returns."""
    if scheme not in ("http", "https"):
        given = f"not {scheme}" if scheme else "and this address names no scheme"
        raise Blocked(f"blocked: only http and https URLs are allowed, {given}")
    host = host.strip("[]")
    if not host:
        raise Blocked("blocked: the URL has no host")
    domains = list(allowed_domains or [])
    if domains and not domain_matches(host, domains):
        raise Blocked(f"blocked: {host} is not in the allowed domains ({', '.join(domains)})")
    return await check_host(host, port or (443 if scheme == "https" else 80), allow)


async def check_host(host: str, port: int, allow: AllowList) -> IPAddress:
    """The address to connect to for ``host``, or ``Blocked``: the check of :func:`check_target` for
    clients that speak another protocol than HTTP (LDAP) and connect to the returned address."""
    addresses = await _resolve(host, port)
    if allow.allows_name(host):
        return addresses[0]
    refusal = ""
    for ip in addresses:
        reason = classify(ip)
        if reason is None or allow.allows_ip(ip):
            return ip
        refusal = refusal or (
            f"blocked: {ip} is {reason}" if str(ip) == host else f"blocked: {host} resolves to {ip}, {reason}"
        )
    raise Blocked(refusal + " (an admin can allow it in the internal hosts setting)")


async def check_url(url: httpx.URL, allow: AllowList, allowed_domains: Iterable[str] | None = None) -> IPAddress:
    """:func:`check_target` for an httpx URL."""
    host = url.raw_host.decode("ascii", errors="replace")
    return await check_target(url.scheme, host, url.port, allow, allowed_domains)


def _redirect_method(status: int, method: str) -> str:
    if status == 303 and method != "HEAD":
        return "GET"
    if status in (301, 302) and method == "POST":
        return "GET"
    return method


async def _read_capped(resp: httpx.Response, max_bytes: int, truncate: bool) -> tuple[bytes, bool]:
    declared = resp.headers.get("content-length", "")
    if not truncate and declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge(f"response too large: {declared} bytes (limit {max_bytes})")
    buf = bytearray()
    async for chunk in resp.aiter_bytes():
        buf.extend(chunk)
        if len(buf) > max_bytes:
            if not truncate:
                raise TooLarge(f"response too large: more than {max_bytes} bytes")
            return bytes(buf[:max_bytes]), True
    return bytes(buf), False


async def request(
    method: str,
    url: str,
    *,
    allow: AllowList | None = None,
    headers: Mapping[str, str] | None = None,
    params: Mapping[str, Any] | None = None,
    json: Any = None,
    content: bytes | str | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    max_redirects: int = DEFAULT_MAX_REDIRECTS,
    allowed_domains: Iterable[str] | None = None,
    truncate: bool = False,
    verify: ssl.SSLContext | None = None,
) -> GuardedResponse:
    """Send one request through the guard, following redirects by hand. Raises :class:`NetError`.

    ``verify`` replaces the system CA bundle (for a private CA); certificates are always checked against
    the URL's host name, never the pinned address."""
    allow = allow or AllowList()
    try:
        current = httpx.URL(url, params=params) if params else httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as exc:
        raise NetError(f"invalid URL: {exc}") from exc
    sent = httpx.Headers({"User-Agent": USER_AGENT})
    sent.update(dict(headers or {}))
    body: dict[str, Any] = {"json": json} if json is not None else {"content": content}
    redirects: list[str] = []
    try:
        transport = GuardedTransport(allow, allowed_domains=allowed_domains, verify=verify, max_body_bytes=None)
        async with asyncio.timeout(timeout_s), httpx.AsyncClient(
            transport=transport, follow_redirects=False, timeout=timeout_s
        ) as client:
            while True:
                req = client.build_request(method, current, headers=sent, **body)
                resp = await client.send(req, stream=True)
                try:
                    location = resp.headers.get("location")
                    if resp.status_code in REDIRECT_CODES and location:
                        if len(redirects) >= max_redirects:
                            raise NetError(f"too many redirects (more than {max_redirects})")
                        nxt = current.join(location)
                        if (nxt.scheme, nxt.netloc) != (current.scheme, current.netloc):
                            sent = httpx.Headers(
                                {k: v for k, v in sent.items() if k.lower() in CROSS_ORIGIN_SAFE_HEADERS}
                            )
                        new_method = _redirect_method(resp.status_code, method)
                        if new_method != method:
                            body = {}
                            sent.pop("content-type", None)
                        method = new_method
                        redirects.append(str(nxt))
                        current = nxt
                        continue
                    data, truncated = await _read_capped(resp, max_bytes, truncate)
                    return GuardedResponse(
                        url=str(current), status_code=resp.status_code, headers=resp.headers, content=data,
                        truncated=truncated, redirects=redirects, encoding=resp.charset_encoding,
                    )
                finally:
                    await resp.aclose()
    except TimeoutError as exc:
        raise NetTimeout(f"timed out after {timeout_s:g} s") from exc
    except httpx.TimeoutException as exc:
        raise NetTimeout(f"timed out after {timeout_s:g} s") from exc
    except httpx.HTTPError as exc:
        # The host only: a URL may carry a token (webhooks), and messages reach the model.
        raise NetError(f"request to {current.host} failed: {type(exc).__name__}: {exc}") from exc


# --- the guard as a transport -------------------------------------------------------------------------


def _pinned_url(url: Any, ip: IPAddress) -> Any:
    """The same URL with the checked address as its host (httpx and httpx2 URLs share this API)."""
    return url.copy_with(host=str(ip))


class _CappedStream(httpx.AsyncByteStream, httpx2.AsyncByteStream):
    """A response body that fails once it passes ``limit`` bytes (both libraries' stream interface)."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise TooLarge(f"response too large: more than {self._limit} bytes")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


# Where a server-sent event ends: an empty line, i.e. two line ends in a row (``\n``, ``\r`` or ``\r\n``
# each). Every such pair holds one of these; none of them occurs elsewhere.
_EVENT_ENDS = (b"\n\n", b"\r\r", b"\n\r")


class _EventCappedStream(httpx.AsyncByteStream, httpx2.AsyncByteStream):
    """An event stream that fails once one event passes ``limit`` bytes. Its reader may buffer a line, or
    an event, whole before it looks at it: without this a single event of 200 MB was held whole (and then
    parsed, and kept) by a2a-sdk's client, and a stream that never ended an event grew without end."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner = inner
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        open_bytes = 0  # bytes since the last event ended
        last = b""  # the previous chunk's last byte: an event's end may straddle two chunks
        async for chunk in self._inner:
            seen = last + chunk
            end = max(seen.rfind(mark) for mark in _EVENT_ENDS)
            open_bytes = len(seen) - end - 2 if end >= 0 else open_bytes + len(chunk)
            if open_bytes > self._limit:
                raise TooLarge(f"an event of the response stream is larger than {self._limit:,} bytes")
            last = chunk[-1:]
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _is_event_stream(headers: Any) -> bool:
    return str(headers.get("content-type", "")).lower().startswith("text/event-stream")


def _needs_cap(headers: Any, limit: int | None) -> bool:
    """Event streams are read event by event (their reader bounds an event); any other body is capped."""
    return limit is not None and not _is_event_stream(headers)


class _Guard:
    """What both transports share: the check of each request's target and the pinned copy sent on."""

    def __init__(self, allow: AllowList, allowed_domains: Iterable[str] | None, max_body_bytes: int | None,
                 max_event_bytes: int | None = None) -> None:
        self.allow = allow
        self.allowed_domains = list(allowed_domains or [])
        self.max_body_bytes = max_body_bytes
        self.max_event_bytes = max_event_bytes

    def capped(self, headers: Any, stream: Any) -> Any | None:
        """The response body wrapped in the cap it needs, or None when it needs none."""
        if _needs_cap(headers, self.max_body_bytes):
            assert self.max_body_bytes is not None
            return _CappedStream(stream, self.max_body_bytes)
        if self.max_event_bytes is not None and _is_event_stream(headers):
            return _EventCappedStream(stream, self.max_event_bytes)
        return None

    async def target(self, url: Any) -> IPAddress:
        host = url.raw_host.decode("ascii", errors="replace")
        return await check_target(url.scheme, host, url.port, self.allow, self.allowed_domains)

    @staticmethod
    def extensions(request: Any) -> dict[str, Any]:
        """The request's extensions plus the TLS server name: certificates are checked against the URL's
        host name, never the pinned address."""
        extensions = dict(request.extensions)
        if request.url.scheme == "https":
            extensions["sni_hostname"] = request.url.raw_host.decode("ascii")
        return extensions


class GuardedTransport(httpx.AsyncBaseTransport):
    """An httpx transport that checks every request's host (every redirect hop too, since each hop is a
    request) and connects to the very address it checked. The ``Host`` header keeps the name: httpx set it
    when the request was built."""

    def __init__(
        self,
        allow: AllowList,
        *,
        allowed_domains: Iterable[str] | None = None,
        verify: ssl.SSLContext | None = None,
        max_body_bytes: int | None = STREAM_MAX_BODY_BYTES,
        max_event_bytes: int | None = None,
        limits: httpx.Limits | None = None,
    ) -> None:
        self._guard = _Guard(allow, allowed_domains, max_body_bytes, max_event_bytes)
        self._inner = httpx.AsyncHTTPTransport(
            verify=verify or _ssl_context(), trust_env=False,
            limits=limits or httpx.Limits(max_connections=STREAM_MAX_CONNECTIONS),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        ip = await self._guard.target(request.url)
        pinned = httpx.Request(request.method, _pinned_url(request.url, ip), headers=request.headers,
                               stream=request.stream, extensions=self._guard.extensions(request))
        response = await self._inner.handle_async_request(pinned)
        stream = self._guard.capped(response.headers, response.stream)
        if stream is None:
            return response
        return httpx.Response(response.status_code, headers=response.headers, extensions=response.extensions,
                              stream=stream)

    async def aclose(self) -> None:
        await self._inner.aclose()


class GuardedTransport2(httpx2.AsyncBaseTransport):
    """:class:`GuardedTransport` for httpx2 (the HTTP library of the ``mcp`` SDK)."""

    def __init__(
        self,
        allow: AllowList,
        *,
        allowed_domains: Iterable[str] | None = None,
        verify: ssl.SSLContext | None = None,
        max_body_bytes: int | None = STREAM_MAX_BODY_BYTES,
        max_event_bytes: int | None = None,
    ) -> None:
        self._guard = _Guard(allow, allowed_domains, max_body_bytes, max_event_bytes)
        self._inner = httpx2.AsyncHTTPTransport(
            verify=verify or _ssl_context2(), trust_env=False,
            limits=httpx2.Limits(max_connections=STREAM_MAX_CONNECTIONS),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        ip = await self._guard.target(request.url)
        pinned = httpx2.Request(request.method, _pinned_url(request.url, ip), headers=request.headers,
                                stream=request.stream, extensions=self._guard.extensions(request))
        response = await self._inner.handle_async_request(pinned)
        stream = self._guard.capped(response.headers, response.stream)
        if stream is None:
            return response
        return httpx2.Response(response.status_code, headers=response.headers, extensions=response.extensions,
                               stream=stream)

    async def aclose(self) -> None:
        await self._inner.aclose()


@lru_cache(maxsize=1)
def _ssl_context2() -> ssl.SSLContext:
    return httpx2.create_ssl_context()


def stream_timeout() -> httpx.Timeout:
    """Timeouts for clients that hold event streams: quick to connect, patient between events."""
    return httpx.Timeout(STREAM_CONNECT_TIMEOUT_S, read=STREAM_READ_TIMEOUT_S, write=STREAM_WRITE_TIMEOUT_S)


def guarded_client(
    allow: AllowList, *, headers: Mapping[str, str] | None = None, max_body_bytes: int = STREAM_MAX_BODY_BYTES,
    max_event_bytes: int | None = None,
) -> httpx.AsyncClient:
    """An httpx client whose every request passes the guard (the A2A client's): a body that is not an
    event stream is capped at ``max_body_bytes``, each event of one at ``max_event_bytes`` (when given)."""
    sent = {"User-Agent": USER_AGENT, **dict(headers or {})}
    transport = GuardedTransport(allow, max_body_bytes=max_body_bytes, max_event_bytes=max_event_bytes)
    return httpx.AsyncClient(transport=transport, headers=sent, timeout=stream_timeout(),
                             follow_redirects=False, trust_env=False)


def guarded_client2(
    allow: AllowList, *, headers: Mapping[str, str] | None = None,
    wrap: Callable[[httpx2.AsyncBaseTransport], httpx2.AsyncBaseTransport] | None = None,
    max_body_bytes: int | None = STREAM_MAX_BODY_BYTES,
) -> httpx2.AsyncClient:
    """An httpx2 client whose every request passes the guard (the MCP client's). ``wrap`` puts a transport
    of the caller's around the guarded one (it sees what the guard let through); ``max_body_bytes`` caps
    each body that is not an event stream."""
    sent = {"User-Agent": USER_AGENT, **dict(headers or {})}
    timeout = httpx2.Timeout(STREAM_CONNECT_TIMEOUT_S, read=STREAM_READ_TIMEOUT_S, write=STREAM_WRITE_TIMEOUT_S)
    transport: httpx2.AsyncBaseTransport = GuardedTransport2(allow, max_body_bytes=max_body_bytes)
    return httpx2.AsyncClient(transport=wrap(transport) if wrap else transport, headers=sent, timeout=timeout,
                              follow_redirects=False, trust_env=False)


def parse_header_lines(text: str) -> dict[str, str]:
    """``Name: value`` lines (the form secret headers are stored in) to a dict; blank lines ignored."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line:
            name, value = line.split(":", 1)
            if name.strip():
                out[name.strip()] = value.strip()
    return out
