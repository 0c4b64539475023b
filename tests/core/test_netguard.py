"""The network guard: internal addresses are refused before any connection, after DNS and on every
redirect; an allow-list opens chosen hosts; size and time are capped. Only loopback traffic. (How a tool
gets its allow-list, the admin's setting among it, is in ``tests/tools/types/test_net.py``.)"""

from __future__ import annotations

import ipaddress
import time

import pytest

from agentloft.core import netguard
from agentloft.core.netguard import AllowList, Blocked, NetError, NetTimeout, TooLarge
from tests.tools.types.local_server import LocalWeb

LOCAL = ("127.0.0.1",)  # the allow-list entry that lets a test reach its own server


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("127.8.9.10", "a loopback address"),
        ("::1", "a loopback address"),
        ("::ffff:127.0.0.1", "a loopback address"),
        ("10.0.0.1", "a private address"),
        ("172.16.5.4", "a private address"),
        ("192.168.1.1", "a private address"),
        ("fd00::1", "a private address"),
        ("169.254.169.254", "a link-local address"),
        ("fe80::1", "a link-local address"),
        ("224.0.0.1", "a multicast address"),
        ("ff02::1", "a multicast address"),
        ("0.0.0.0", "an unspecified address"),
        ("240.0.0.1", "a reserved address"),
        ("100.64.0.1", "a non-public address"),
        ("64:ff9b::a9fe:a9fe", "a link-local address"),  # NAT64 for 169.254.169.254
        ("2002:7f00:1::", "a loopback address"),  # 6to4 for 127.0.0.1
    ],
)
def test_internal_addresses_are_classified(address: str, reason: str) -> None:
    assert netguard.classify(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["93.184.215.14", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808"])
def test_public_addresses_pass(address: str) -> None:
    assert netguard.classify(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://10.0.0.1/admin", "blocked: 10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "blocked: 169.254.169.254 is a link-local address"),
        ("http://[::1]:9/", "blocked: ::1 is a loopback address"),
        ("http://0.0.0.0:80/", "blocked: 0.0.0.0 is an unspecified address"),
        ("file:///etc/passwd", "blocked: only http and https URLs are allowed"),
        ("gopher://example.test/", "blocked: only http and https URLs are allowed"),
    ],
)
async def test_internal_targets_are_refused(url: str, message: str) -> None:
    started = time.perf_counter()
    with pytest.raises(Blocked, match=message.replace(".", r"\.").replace("[", r"\[")):
        await netguard.request("GET", url)
    assert time.perf_counter() - started < 1  # refused before any connection attempt


async def test_host_name_entry_allows_that_name_and_keeps_the_host_header(web: LocalWeb) -> None:
    resp = await netguard.request("GET", f"http://localhost:{web.port}/echo", allow=AllowList.parse(["LOCALHOST"]))
    assert resp.ok
    assert resp.json_body()["headers"]["host"] == f"localhost:{web.port}"
    with pytest.raises(Blocked):
        await netguard.request("GET", f"{web.url}/echo", allow=AllowList.parse(["localhost.example"]))


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("http://10.0.0.1/", "blocked: 10.0.0.1 is a private address"),
        ("http://169.254.169.254/latest/meta-data/", "blocked: 169.254.169.254 is a link-local address"),
        ("http://127.0.0.2:9/", "blocked: 127.0.0.2 is a loopback address"),
        ("http://[::1]:9/", "blocked: ::1 is a loopback address"),
    ],
)
async def test_redirect_to_an_internal_address_is_refused(web: LocalWeb, target: str, message: str) -> None:
    allow = AllowList.parse(["127.0.0.1"])
    with pytest.raises(Blocked, match=message.replace(".", r"\.")):
        await netguard.request("GET", f"{web.url}/redirect", params={"to": target}, allow=allow)
    assert web.paths() == ["/redirect"]


async def test_a_name_entry_does_not_open_the_address_behind_it(web: LocalWeb) -> None:
    """``localhost`` is allowed by name; a redirect to its address is a different, refused target."""
    with pytest.raises(Blocked, match=r"blocked: 127\.0\.0\.1 is a loopback address"):
        await netguard.request("GET", f"http://localhost:{web.port}/redirect",
                               params={"to": f"{web.url}/page"}, allow=AllowList.parse(["localhost"]))
    assert web.paths() == ["/redirect"]


async def test_allowed_redirects_are_followed_and_limited(web: LocalWeb) -> None:
    allow = AllowList.parse(LOCAL)
    resp = await netguard.request("GET", f"{web.url}/redirect", params={"to": "/page"}, allow=allow)
    assert resp.ok and resp.url == f"{web.url}/page" and resp.redirects == [f"{web.url}/page"]
    with pytest.raises(NetError, match=r"too many redirects \(more than 3\)"):
        await netguard.request("GET", f"{web.url}/loop", allow=allow, max_redirects=3)
    assert web.paths().count("/loop") == 4


async def test_cross_origin_redirect_drops_credentials(web: LocalWeb) -> None:
    allow = AllowList.parse(["127.0.0.1", "localhost"])
    resp = await netguard.request(
        "GET", f"{web.url}/redirect", params={"to": f"http://localhost:{web.port}/echo"}, allow=allow,
        headers={"Authorization": "Bearer s3cret", "X-Api-Key": "k", "Accept-Language": "de"},
    )
    seen = resp.json_body()["headers"]
    assert "authorization" not in seen and "x-api-key" not in seen
    assert seen["accept-language"] == "de"


async def test_post_becomes_get_after_303(web: LocalWeb) -> None:
    resp = await netguard.request("POST", f"{web.url}/redirect", params={"to": "/echo", "code": "303"},
                                  json={"a": 1}, allow=AllowList.parse(LOCAL))
    assert resp.json_body()["method"] == "GET"
    assert resp.json_body()["body"] == ""


async def test_size_is_capped(web: LocalWeb) -> None:
    allow = AllowList.parse(LOCAL)
    with pytest.raises(TooLarge, match="response too large: more than 100000 bytes"):
        await netguard.request("GET", f"{web.url}/big", allow=allow, max_bytes=100_000)
    resp = await netguard.request("GET", f"{web.url}/big", allow=allow, max_bytes=100_000, truncate=True)
    assert resp.truncated and len(resp.content) == 100_000


async def test_time_is_capped(web: LocalWeb) -> None:
    started = time.perf_counter()
    with pytest.raises(NetTimeout, match=r"timed out after 0\.3 s"):
        await netguard.request("GET", f"{web.url}/slow", params={"s": "1.5"}, allow=AllowList.parse(LOCAL),
                               timeout_s=0.3)
    assert time.perf_counter() - started < 2

