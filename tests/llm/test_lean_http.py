"""The lean HTTP transport (``chat.lean_http``) against the fake model server: which connections it keeps."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from agentloft.llm import lean_http
from agentloft.llm.lean_http import LeanTransport
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, text


async def _stream(client: httpx.AsyncClient, url: str, *, read_all: bool) -> None:
    body = {"model": "fake", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    request = client.build_request("POST", f"{url}/chat/completions", json=body)
    response = await client.send(request, stream=True)
    try:
        async for _ in response.aiter_raw():
            if not read_all:
                break
    finally:
        await response.aclose()


async def test_a_response_closed_mid_stream_is_not_kept_but_a_finished_one_is(
    fake_model: FakeModel, fake_model_server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lean_http, "DRAIN_S", 0.2)
    client = httpx.AsyncClient(transport=LeanTransport(httpx.AsyncHTTPTransport()))
    try:
        # a stopped run: cut off after its first piece of a reply that takes 1.6 s in all
        fake_model.push(Step(text="one two three four five six seven eight", delay=0.2),
                        text("second"), text("third"))
        await _stream(client, fake_model_server.base_url, read_all=False)
        # past the reply's end: a drain without its time limit would have read it all and kept the
        # connection; this one gave up after DRAIN_S and closed it
        await asyncio.sleep(2.0)
        await _stream(client, fake_model_server.base_url, read_all=True)
        await _stream(client, fake_model_server.base_url, read_all=True)
    finally:
        await client.aclose()
    first, second, third = (h[":peer"] for h in fake_model.headers)
    assert first != second  # the cut-off stream's connection was closed, not reused mid-reply
    assert second == third  # a finished stream's connection is reused
