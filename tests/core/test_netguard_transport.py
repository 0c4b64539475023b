"""The network guard as a transport: the clients the platform does not drive request by request (the A2A
client on httpx, the MCP client on httpx2) check and pin every request, redirect hops included, and cap
every body that is not an event stream. Only loopback traffic."""

from __future__ import annotations

from typing import Any

import httpx
import httpx2
import pytest

from agentloft.core import netguard
from agentloft.core.netguard import AllowList, Blocked, TooLarge
from tests.tools.types.local_server import LocalWeb

LOCAL = AllowList.parse(["127.0.0.1"])


def clients(allow: AllowList, **kw: Any) -> list[Any]:
    return [
        httpx.AsyncClient(transport=netguard.GuardedTransport(allow, **kw)),
        httpx2.AsyncClient(transport=netguard.GuardedTransport2(allow, **kw)),
    ]


@pytest.mark.parametrize("library", [0, 1], ids=["httpx", "httpx2"])
async def test_internal_host_is_refused_before_any_request(web: LocalWeb, library: int) -> None:
    async with clients(AllowList())[library] as client:
        with pytest.raises(Blocked, match=r"blocked: 127\.0\.0\.1 is a loopback address"):
            await client.get(f"{web.url}/echo")
    assert web.requests == []


@pytest.mark.parametrize("library", [0, 1], ids=["httpx", "httpx2"])
async def test_allowed_host_passes_with_its_host_header(web: LocalWeb, library: int) -> None:
    allow = AllowList.parse(["localhost"])
    async with clients(allow)[library] as client:
        resp = await client.get(f"http://localhost:{web.port}/echo")
    assert resp.status_code == 200
    assert resp.json()["headers"]["host"] == f"localhost:{web.port}"
    assert str(resp.request.url) == f"http://localhost:{web.port}/echo", "the caller sees the name, not the pin"


@pytest.mark.parametrize("library", [0, 1], ids=["httpx", "httpx2"])
async def test_every_redirect_hop_is_checked(web: LocalWeb, library: int) -> None:
    async with clients(LOCAL)[library] as client:
        with pytest.raises(Blocked, match=r"blocked: 10\.0\.0\.1 is a private address"):
            await client.get(f"{web.url}/redirect", params={"to": "http://10.0.0.1/"}, follow_redirects=True)
    assert web.paths() == ["/redirect"]


@pytest.mark.parametrize("library", [0, 1], ids=["httpx", "httpx2"])
async def test_plain_bodies_are_capped_event_streams_are_not(web: LocalWeb, library: int) -> None:
    async with clients(LOCAL, max_body_bytes=100_000)[library] as client:
        with pytest.raises(TooLarge, match="more than 100000 bytes"):
            await client.get(f"{web.url}/big")
        async with client.stream("GET", f"{web.url}/events") as resp:
            size = sum([len(chunk) async for chunk in resp.aiter_bytes()])
    assert size > 12_000_000


@pytest.mark.parametrize("library", [0, 1], ids=["httpx", "httpx2"])
@pytest.mark.parametrize("end", ["lf", "crlf", "cr"])
async def test_each_event_of_a_stream_can_be_capped(web: LocalWeb, library: int, end: str) -> None:
    """``max_event_bytes`` bounds one event (every line of it), not the stream: whichever line ends the
    server uses, wherever the chunks cut them."""
    limit = 1024 * 1024

    async def read(**params: Any) -> int:
        client = clients(LOCAL, max_event_bytes=limit)[library]
        async with client, client.stream("GET", f"{web.url}/sse", params={"end": end, **params}) as resp:
            return sum([len(chunk) async for chunk in resp.aiter_bytes()])

    assert await read(width=700_000, count=6) > 4 * limit, "events under the limit pass, however many"
    assert await read(width=1000, lines=1000, count=3) > 2 * limit, "so do events of many lines"
    with pytest.raises(TooLarge, match="an event of the response stream is larger than 1,048,576 bytes"):
        await read(width=1_100_000)
    with pytest.raises(TooLarge, match="larger than 1,048,576 bytes"):
        await read(width=1000, lines=1100)  # 1.1 MB of lines, none of them ending the event


async def test_guarded_clients_have_stream_limits() -> None:
    async with netguard.guarded_client(LOCAL) as a, netguard.guarded_client2(LOCAL) as b:
        for client in (a, b):
            assert client.timeout.read == netguard.STREAM_READ_TIMEOUT_S
            assert client.timeout.connect == netguard.STREAM_CONNECT_TIMEOUT_S
            assert client.headers["user-agent"] == netguard.USER_AGENT
