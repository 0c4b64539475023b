"""Reasoning in ``<think>`` tags inside the content (DeepSeek-R1 distills on Groq, Ollama, vLLM, LM Studio)
comes out the same through the chat endpoint however the network cut the stream: one event per read, the
whole reply in one read (a reader behind its model, where deltas get merged), or 7 bytes at a time."""

from __future__ import annotations

import pytest

from tests.chat.helpers import chat, make_agent
from tests.fakes.openai_server import FakeModel, Step, sse_body
from tests.fakes.sse import DELIVERIES, Writes
from tests.support import ApiClient

PIECES = ["<think>", "\n", "The user ", "wants ", "a sum.", "\n", "</think>", "\n\n", "2 + 2 ", "= ", "4."]


@pytest.mark.parametrize("writes", DELIVERIES)
def test_think_tags_never_swallow_the_answer(
    admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel, writes: Writes
) -> None:
    make_agent(admin, "helper", modelId=model_id)
    body = sse_body({"role": "assistant", "content": ""}, *({"content": p} for p in PIECES), usage=(9, 11))
    fake_model.push(Step(raw=body, writes=writes))
    res = chat(user, "helper", "what is 2 + 2?")
    assert not res.of("error")
    assert res.text == "\n\n2 + 2 = 4."
    assert "".join(c["delta"] for c in res.of("reasoning-delta")) == "\nThe user wants a sum.\n"
    reply = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][-1]
    assert reply["status"] == "complete" and reply["content"] == "\n\n2 + 2 = 4."
    assert [p["type"] for p in reply["parts"] if p["type"] in ("text", "reasoning")] == ["reasoning", "text"]
    assert (reply["inputTokens"], reply["outputTokens"]) == (9, 11)
