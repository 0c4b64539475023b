"""What a streamed model request looks like on the wire (the ``openai`` SDK sends it; ``llm.lean_openai``
only reads the reply): the key, the headers, the body, the SDK's retry rules, and connection reuse."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import chat, make_agent
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, text
from tests.support import ApiClient


def test_a_streamed_request_carries_the_key_headers_and_settings(
    admin: ApiClient, user: ApiClient, fake_model: FakeModel, fake_model_server: FakeModelServer
) -> None:
    model = admin.ok("POST", "/api/admin/models", json={
        "name": "Keyed", "provider": "openai", "baseUrl": fake_model_server.base_url, "model": "keyed-model",
        "apiKey": "sk-test-1234"})
    make_agent(admin, "keyed", modelId=model["id"], maxOutputTokens=77)
    fake_model.push(text("hi — ünïcode"))
    assert chat(user, "keyed", "héllo").text == "hi — ünïcode"
    headers, body = fake_model.headers[-1], fake_model.requests[-1]
    assert headers["authorization"] == "Bearer sk-test-1234"
    assert headers["content-type"] == "application/json"
    assert "pydantic-ai" in headers["user-agent"]
    assert body["model"] == "keyed-model" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert 77 in (body.get("max_tokens"), body.get("max_completion_tokens"))
    assert body["messages"] == [{"role": "system", "content": "You are keyed."},
                                {"role": "user", "content": "héllo"}]
    assert not any(value is None for value in body.values())  # omitted settings are left out, not null


def test_a_model_that_fails_once_is_asked_again(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(error_status=503, error_message="busy"), text("second try"))
    res = chat(user, "helper", "hello")
    assert res.text == "second try" and not res.of("error")
    assert len(fake_model.requests) == 2


def test_a_rejected_request_is_not_retried_and_says_why(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(Step(error_status=400, error_message="context too long"))
    res = chat(user, "helper", "hello")
    assert res.of("error")[0]["errorText"] == "The model answered with HTTP 400: context too long"
    assert len(fake_model.requests) == 1


def test_chats_reuse_the_connection_to_the_model(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    """A streamed reply ends at ``[DONE]``; the rest of its HTTP body is read after that, so the next turn
    goes over the same connection instead of opening a new one."""
    for n in range(4):
        fake_model.push(text(f"reply {n} " * 20))
        assert chat(user, "helper", f"message {n}").text.startswith(f"reply {n}")
    peers = [h[":peer"] for h in fake_model.headers]
    assert len(peers) == 4 and len(set(peers)) == 1, peers
