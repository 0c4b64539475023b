"""The repair of lone surrogate escapes in what an MCP server sends (``tools.mcp.repair``), piece by
piece as a streamed body arrives: every split of a body gives what the whole body gives, and a piece that
does not end inside an escape is passed on at once."""

from __future__ import annotations

import asyncio
import json

import httpx2
import pytest

from agentloft.tools.mcp.repair import RepairingTransport, repair

BODY = r'{"a": "x\ud83d y", "b": "\ud83d\ude00 ok", "c": "\\ud83d stays", "d": "\\\ud83d", "e": "\udc00"}'
WANT = {"a": "x\ufffd y", "b": "\U0001f600 ok", "c": "\\ud83d stays", "d": "\\\ufffd", "e": "\ufffd"}


def test_lone_halves_are_replaced_and_everything_else_kept() -> None:
    assert json.loads(repair(BODY)) == WANT
    assert repair('{"plain": "no escapes"}') == '{"plain": "no escapes"}'


class _Pieces(httpx2.AsyncBaseTransport):
    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        pieces = self.pieces

        class Stream(httpx2.AsyncByteStream):
            async def __aiter__(self):  # type: ignore[override]  # an async generator, as httpx2's own
                for piece in pieces:
                    yield piece

        return httpx2.Response(200, stream=Stream())


async def _through(pieces: list[bytes]) -> bytes:
    async with httpx2.AsyncClient(transport=RepairingTransport(_Pieces(pieces))) as client:
        return (await client.get("http://mcp.test/")).content


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 11, 13, 1000])
async def test_any_split_of_a_streamed_body_gives_the_same(size: int) -> None:
    raw = BODY.encode()
    got = await _through([raw[i : i + size] for i in range(0, len(raw), size)])
    assert json.loads(got) == WANT


async def test_a_body_that_is_not_utf8_is_decoded_with_replacement() -> None:
    raw = b'{"t": "caf' + b"\xe9" + '", "u": "€"}'.encode()
    got = await _through([raw[:11], raw[11:13], raw[13:]])
    assert json.loads(got) == {"t": "caf\ufffd", "u": "€"}


async def test_a_streamed_event_is_passed_on_at_once() -> None:
    """An SSE stream may pause after any event (a notification, then nothing for minutes): what does not
    end inside an escape is passed on whole, never kept back waiting for the next piece."""
    first = b'data: {"method": "notifications/tools/list_changed", "x": "\\u00e9"}\n\n'
    gate = asyncio.Event()

    class Paused(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            class Stream(httpx2.AsyncByteStream):
                async def __aiter__(self):  # type: ignore[override]  # an async generator, as httpx2's own
                    yield first
                    await gate.wait()
                    yield b"data: {}\n\n"

            return httpx2.Response(200, stream=Stream())

    client = httpx2.AsyncClient(transport=RepairingTransport(Paused()))
    async with client, client.stream("GET", "http://mcp.test/") as response:
        pieces = response.aiter_raw()
        assert await asyncio.wait_for(anext(pieces), 5) == first
        gate.set()
        assert await anext(pieces) == b"data: {}\n\n"
