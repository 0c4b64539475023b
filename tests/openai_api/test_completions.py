"""``/v1/models`` and non-streaming ``/v1/chat/completions`` through the official ``openai`` SDK against the
live app: which agents a token's user sees, the conversation as the model gets it, the session and usage
kept as ``api``, a turn that waits for an approval, and errors in OpenAI's shape."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import httpx
import openai
import pytest
from openai import AsyncOpenAI, OpenAI

from tests.chat.helpers import Streamed, attach, make_agent, make_tool, session_status
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.support import ApiClient, LiveApp


def _client(base_url: str, token: str) -> OpenAI:
    return OpenAI(base_url=base_url, api_key=token, max_retries=0)


def _token_of(client: ApiClient) -> str:
    return client.ok("POST", "/api/auth/tokens", json={"name": "openai"})["token"]


def test_models_are_the_agents_the_tokens_user_may_use(
    admin: ApiClient, make_user: Callable[..., ApiClient], base_url: str, agent: dict[str, Any], model_id: int,
) -> None:
    member, outsider = make_user("member"), make_user("outsider")
    users = {u["username"]: u["id"] for u in admin.ok("GET", "/api/admin/users?pageSize=100")["items"]}
    team = admin.ok("POST", "/api/admin/groups", json={"name": "team"})["id"]
    admin.ok("PUT", f"/api/admin/groups/{team}/members", json=[users["member"]])
    make_agent(admin, "team-only", modelId=model_id, groupIds=[team])
    make_agent(admin, "switched-off", modelId=model_id, enabled=False)

    def ids(client: ApiClient) -> list[str]:
        return sorted(m.id for m in _client(base_url, _token_of(client)).models.list())

    assert ids(outsider) == ["helper"]
    assert ids(member) == ["helper", "team-only"]
    assert ids(admin) == ["helper", "team-only"]
    listed = _client(base_url, _token_of(outsider)).models.list().data[0]
    assert (listed.object, listed.owned_by) == ("model", "agentloft") and listed.created > 0
    # a hidden agent is no model of the outsider's: 404 model_not_found, as for one that does not exist
    with pytest.raises(openai.NotFoundError) as hidden:
        _client(base_url, _token_of(outsider)).chat.completions.create(
            model="team-only", messages=[{"role": "user", "content": "hi"}])
    assert hidden.value.code == "model_not_found"
    assert hidden.value.body == {"message": "The model 'team-only' does not exist or you do not have access to it",
                                 "type": "invalid_request_error", "param": None, "code": "model_not_found"}


def test_a_completion_runs_the_agent_on_the_requests_conversation(
    app: LiveApp, user: ApiClient, token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    fake_model.push(text("Paris it is.", input_tokens=12, output_tokens=4))
    done = _client(base_url, token).chat.completions.create(model="helper", messages=[
        {"role": "system", "content": "Answer in one line."},
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": [{"type": "text", "text": "And "}, {"type": "text", "text": "again?"}]},
    ])
    assert done.object == "chat.completion" and done.model == "helper"
    assert done.choices[0].message.content == "Paris it is." and done.choices[0].finish_reason == "stop"
    assert done.usage is not None
    assert (done.usage.prompt_tokens, done.usage.completion_tokens, done.usage.total_tokens) == (12, 4, 16)
    sent = fake_model.requests[-1]["messages"]
    assert sent[0]["role"] == "system" and sent[0]["content"] == "You are helper.\n\nAnswer in one line."
    assert [(m["role"], m["content"]) for m in sent[1:]] == [
        ("user", "Capital of France?"), ("assistant", "Paris."), ("user", "And again?")]
    # kept as a session of the user, in the sidebar's list and under its own filter
    sessions = user.ok("GET", "/api/agent-sessions")["items"]
    assert [s["agentSlug"] for s in sessions] == ["helper"]
    sid = sessions[0]["id"]
    assert [s["id"] for s in user.ok("GET", "/api/agent-sessions?source=api")["items"]] == [sid]
    detail = user.ok("GET", f"/api/agent-sessions/{sid}")
    assert [(m["role"], m["content"]) for m in detail["messages"]] == [
        ("user", "Capital of France?"), ("assistant", "Paris."), ("user", "And again?"),
        ("assistant", "Paris it is.")]
    assert {r[0] for r in app.sql("SELECT source FROM agent_messages WHERE session_id = ?", (sid,))} == {"api"}
    assert app.sql("SELECT source, input_tokens, output_tokens, session_id FROM usage_records") == [
        ("api", 12, 4, sid)]
    # the chat continues it like any other session
    fake_model.push(text("Still Paris."))
    follow = user.post("/api/agents/helper/chat", json={"message": "sure?", "sessionId": sid})
    assert follow.status_code == 200 and Streamed(follow).text == "Still Paris."


def test_a_chat_session_is_not_under_the_api_filter(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    assert user.post("/api/agents/helper/chat", json={"message": "hi"}).status_code == 200
    assert len(user.ok("GET", "/api/agent-sessions")["items"]) == 1
    assert user.ok("GET", "/api/agent-sessions?source=api")["items"] == []
    assert user.ok("GET", "/api/agent-sessions/search?q=hi&source=api")["items"] == []


def test_the_async_client_gets_the_same_answer(
    token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    async def ask() -> str | None:
        async with AsyncOpenAI(base_url=base_url, api_key=token, max_retries=0) as client:
            done = await client.chat.completions.create(model="helper",
                                                        messages=[{"role": "user", "content": "ping"}])
            return done.choices[0].message.content

    assert asyncio.run(ask()) == "echo: ping"


def test_a_call_that_needs_approval_ends_the_completion_with_the_chats_link(
    app: LiveApp, user: ApiClient, admin: ApiClient, token: str, base_url: str, agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    tool = make_tool(admin, "guard", "test-guarded")
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0, "needsApproval": True})
    fake_model.push(Step(text="Let me do that.", tool_calls=[ToolCall("guard", {"action": "read"}, id="ap1")],
                         input_tokens=10, output_tokens=5))
    done = _client(base_url, token).chat.completions.create(model="helper",
                                                            messages=[{"role": "user", "content": "act"}])
    sid = user.ok("GET", "/api/agent-sessions?source=api")["items"][0]["id"]
    content = done.choices[0].message.content or ""
    assert done.choices[0].finish_reason == "stop"
    assert content.startswith("Let me do that.\n\nThe call of guard waits for approval in the chat at ")
    assert f"{app.url}/chat/{sid}" in content
    assert session_status(app, sid) == "awaiting_approval"
    # approved in the chat, the reply goes on there
    fake_model.push(text("Done."))
    resumed = user.post(f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "ap1", "approved": True})
    assert resumed.status_code == 200 and Streamed(resumed).text == "Done."


def test_errors_are_in_openais_shape(
    app: LiveApp, admin: ApiClient, user: ApiClient, token: str, base_url: str, agent: dict[str, Any],
) -> None:
    bare = httpx.post(f"{base_url}/chat/completions", json={"model": "helper", "messages": []})
    assert bare.status_code == 401 and bare.headers["x-request-id"] and bare.headers["www-authenticate"] == "Bearer"
    assert bare.json() == {"error": {"message": "Send a personal API token: Authorization: Bearer <token>",
                                     "type": "invalid_request_error", "param": None, "code": "missing_api_key"}}
    # a signed-in browser's cookie is no API token
    assert user.get("/v1/models").status_code == 401
    with pytest.raises(openai.AuthenticationError) as bad:
        _client(base_url, "not-a-token").models.list()
    assert bad.value.code == "invalid_api_key"
    with pytest.raises(openai.NotFoundError) as unknown:
        _client(base_url, token).chat.completions.create(model="nobody", messages=[{"role": "user", "content": "x"}])
    assert unknown.value.code == "model_not_found"
    headers = {"Authorization": f"Bearer {token}"}
    for body in ({"model": "helper", "messages": []},
                 {"model": "helper", "messages": [{"role": "assistant", "content": "hello"}]},
                 {"model": "helper", "messages": [{"role": "tool", "content": "42", "tool_call_id": "c"}]},
                 {"model": "helper", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}):
        refused = httpx.post(f"{base_url}/chat/completions", json=body, headers=headers)
        assert refused.status_code == 400, refused.text
        assert set(refused.json()["error"]) == {"message", "type", "param", "code"}
        assert refused.json()["error"]["type"] == "invalid_request_error"
    assert app.sql("SELECT COUNT(*) FROM agent_sessions") == [(0,)]  # nothing refused left a session


def test_a_used_up_budget_is_a_429_in_openais_shape(
    app: LiveApp, admin: ApiClient, token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    alice = int(app.sql("SELECT id FROM users WHERE username = 'alice'")[0][0])
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice, "period": "day",
                                                 "maxTokens": 5, "maxCost": None})
    client = _client(base_url, token)
    client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "use it up"}])
    with pytest.raises(openai.RateLimitError) as refused:
        client.chat.completions.create(model="helper", messages=[{"role": "user", "content": "more"}])
    assert refused.value.code == "budget_exceeded"
    assert refused.value.body["type"] == "insufficient_quota"  # type: ignore[index]
    assert "budget" in refused.value.body["message"]  # type: ignore[index]


def test_a_budget_used_up_between_two_model_calls_is_a_429_too(
    app: LiveApp, admin: ApiClient, token: str, base_url: str, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    tool = make_tool(admin, "echo", "test-echo")
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0})
    alice = int(app.sql("SELECT id FROM users WHERE username = 'alice'")[0][0])
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice, "period": "day",
                                                 "maxTokens": 15, "maxCost": None})
    client = _client(base_url, token)
    for stream in (False, True):
        fake_model.push(Step(tool_calls=[ToolCall("echo", {"text": "x"})], input_tokens=10, output_tokens=5))
        messages: list[Any] = [{"role": "user", "content": "go"}]
        with pytest.raises(openai.APIError) as refused:
            if stream:
                list(client.chat.completions.create(model="helper", messages=messages, stream=True))
            else:
                client.chat.completions.create(model="helper", messages=messages)
        assert refused.value.code == "budget_exceeded", refused.value
        if not stream:
            assert isinstance(refused.value, openai.RateLimitError)
        assert len(fake_model.requests) == 1  # the second model call was never made
        fake_model.requests.clear()
        app.sql("DELETE FROM usage_records")  # the next turn starts within the budget again: its days too
        app.sql("DELETE FROM usage_daily")
