"""Streaming ``/v1/chat/completions`` (``chat.completion.chunk`` over SSE, ``[DONE]``) through the official
``openai`` SDK, and pydantic-ai's own OpenAI model pointed at the live app as a second real client."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI, OpenAI
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from tests.chat.helpers import attach, make_tool
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.support import ApiClient, LiveApp


def test_the_reply_streams_as_chunks_with_usage_and_done(
    app: LiveApp, token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    fake_model.push(text("one two three four", input_tokens=9, output_tokens=4, delay=0.05))
    client = OpenAI(base_url=base_url, api_key=token, max_retries=0)
    chunks = list(client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "count"}],
                                                 stream=True, stream_options={"include_usage": True}))
    assert {c.object for c in chunks} == {"chat.completion.chunk"} and len({c.id for c in chunks}) == 1
    deltas = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert "".join(deltas) == "one two three four"
    assert len(deltas) > 1  # as it came, not in one piece at the end
    assert chunks[0].choices[0].delta.role == "assistant"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    last = chunks[-1]
    assert last.choices == [] and last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens, last.usage.total_tokens) == (9, 4, 13)
    assert app.sql("SELECT source, input_tokens, output_tokens FROM usage_records") == [("api", 9, 4)]


def test_the_raw_stream_ends_with_done_and_sends_usage_only_when_asked(
    token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    body = {"model": "helper", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    with httpx.stream("POST", f"{base_url}/chat/completions", json=body,
                      headers={"Authorization": f"Bearer {token}"}) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream") and resp.headers["x-session-id"]
        lines = [line for line in resp.iter_lines() if line]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    chunks = [json.loads(line[6:]) for line in lines[:-1]]
    assert "".join(c["choices"][0]["delta"].get("content", "") for c in chunks) == "echo: hi"
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


def test_a_streamed_completion_that_waits_for_approval_says_where(
    app: LiveApp, user: ApiClient, admin: ApiClient, token: str, base_url: str, agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    tool = make_tool(admin, "guard", "test-guarded")
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0, "needsApproval": True})
    fake_model.push(Step(text="Asking first.", tool_calls=[ToolCall("guard", {"action": "read"}, id="ap1")]))
    client = OpenAI(base_url=base_url, api_key=token, max_retries=0)
    chunks = list(client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "act"}],
                                                 stream=True))
    said = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    sid = user.ok("GET", "/api/agent-sessions?source=api")["items"][0]["id"]
    assert said.startswith("Asking first.\n\nThe call of guard waits for approval in the chat at ")
    assert f"/chat/{sid}" in said
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_the_async_client_streams(token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel) -> None:
    async def ask() -> str:
        async with AsyncOpenAI(base_url=base_url, api_key=token, max_retries=0) as client:
            stream = await client.chat.completions.create(model="helper", stream=True,
                                                          messages=[{"role": "user", "content": "async"}])
            return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    assert asyncio.run(ask()) == "echo: async"


def test_pydantic_ais_openai_model_talks_to_an_agent(
    app: LiveApp, token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    model = OpenAIChatModel("helper", provider=OpenAIProvider(base_url=base_url, api_key=token))
    client = Agent(model, instructions="Be brief.")
    result = client.run_sync("what is 2+2?")
    assert result.output == "echo: what is 2+2?"
    sent = fake_model.requests[-1]["messages"]
    assert sent[0] == {"role": "system", "content": "You are helper.\n\nBe brief."}

    async def streamed() -> str:
        async with client.run_stream("stream it") as run:
            return "".join([piece async for piece in run.stream_text(delta=True)])

    assert asyncio.run(streamed()) == "echo: stream it"
    usage = app.sql("SELECT source, COUNT(*) FROM usage_records GROUP BY source")
    assert usage == [("api", 2)]


def test_a_model_failure_is_an_error_in_openais_shape_streamed_or_not(
    token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    client = OpenAI(base_url=base_url, api_key=token, max_retries=0)
    fake_model.default = lambda _body: Step(error_status=400, error_message="the model broke")
    with pytest.raises(openai.APIStatusError) as plain:
        client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "hi"}])
    assert plain.value.status_code == 502 and plain.value.code == "turn_failed"
    with pytest.raises(openai.APIError) as streamed:
        list(client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "hi"}],
                                            stream=True))
    assert "did not finish its reply" in streamed.value.message
