"""The one way a tool opens a URL: an HTTP request that cannot be pointed at the inside of the network.

A model can be talked into fetching ``http://169.254.169.254/`` (cloud credentials), ``http://localhost:6379``
or an admin page on the LAN. So every tool that opens a URL calls :func:`guarded_request`, which

- resolves the host itself and refuses loopback, private, link-local, multicast, reserved, unspecified
  and other non-global addresses unless the admin allowed them (setting ``allowed_internal_hosts``:
  host names, ``*.suffix`` patterns, IPs and CIDRs) — the check happens before any connection is made;
- connects to the very address it checked (the URL is rewritten to the IP while the ``Host`` header and
  TLS SNI/certificate check keep the name), so a DNS answer cannot change between check and connect;
- follows redirects itself, checking every hop the same way (at most ``max_redirects``);
- streams the body and stops at ``max_bytes``, and bounds the whole exchange by ``timeout_s``.

Refusals and failures are :class:`NetError` whose message is meant for the model and the user
("blocked: 10.0.0.1 is a private address"); :func:`failure` turns one into a failed ``ToolResult``.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import socket
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import httpx

from agentloft.tools.base import ToolContext, ToolResult

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_MAX_BYTES = 2_000_000
DEFAULT_TIMEOUT_S = 20.0
DEFAULT_MAX_REDIRECTS = 5
USER_AGENT = "agentloft-tools/0.1"
REDIRECT_CODES = {301, 302, 303, 307, 308}
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


async def check_url(url: httpx.URL, allow: AllowList, allowed_domains: Iterable[str] | None = None) -> IPAddress:
    """Refuse the URL or return the address to connect to. Nothing is sent before this returns."""
    if url.scheme not in ("http", "https"):
        raise Blocked(f"blocked: only http and https URLs are allowed, not {url.scheme or 'no scheme'}")
    host = url.raw_host.decode("ascii", errors="replace").strip("[]")
    if not host:
        raise Blocked("blocked: the URL has no host")
    domains = list(allowed_domains or [])
    if domains and not domain_matches(host, domains):
        raise Blocked(f"blocked: {host} is not in the allowed domains ({', '.join(domains)})")
    addresses = await _resolve(host, url.port or (443 if url.scheme == "https" else 80))
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


def _pinned_request(
    client: httpx.AsyncClient, method: str, url: httpx.URL, ip: IPAddress, headers: httpx.Headers,
    body: dict[str, Any],
) -> httpx.Request:
    request = client.build_request(method, url.copy_with(host=str(ip)), headers=headers, **body)
    request.headers["Host"] = url.netloc.decode("ascii")
    if url.scheme == "https":
        request.extensions["sni_hostname"] = url.raw_host.decode("ascii")
    return request


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
        async with asyncio.timeout(timeout_s), httpx.AsyncClient(
            trust_env=False, follow_redirects=False, verify=verify or _ssl_context(), timeout=timeout_s
        ) as client:
            while True:
                ip = await check_url(current, allow, allowed_domains)
                req = _pinned_request(client, method, current, ip, sent, body)
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


async def allow_list_for(ctx: ToolContext, extra: Iterable[str] = ()) -> AllowList:
    """The admin's ``allowed_internal_hosts`` setting, plus what the caller passes down in
    ``ctx.extra["allowed_internal_hosts"]`` and ``extra``."""
    from agentloft.system import service as system_service  # local: keeps this module light to import

    rt = ctx.runtime
    async with rt.db.session() as db:
        instance = await system_service.get_settings(db=db, settings=rt.settings)
    entries = [*instance.allowed_internal_hosts, *ctx.extra.get("allowed_internal_hosts", ()), *extra]
    return AllowList.parse(entries)


async def guarded_request(ctx: ToolContext, method: str, url: str, **kw: Any) -> GuardedResponse:
    """:func:`request` with the allow-list of the tool's runtime."""
    return await request(method, url, allow=await allow_list_for(ctx), **kw)


def failure(exc: NetError) -> ToolResult:
    """A refused or failed request as the tool's failed result."""
    return ToolResult.fail(str(exc), blocked=True) if isinstance(exc, Blocked) else ToolResult.fail(str(exc))


def parse_header_lines(text: str) -> dict[str, str]:
    """``Name: value`` lines (the form secret headers are stored in) to a dict; blank lines ignored."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        if ":" in line:
            name, value = line.split(":", 1)
            if name.strip():
                out[name.strip()] = value.strip()
    return out
