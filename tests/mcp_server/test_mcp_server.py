"""``/mcp`` through the official ``mcp`` SDK's client against the live app: which agents a token's user
gets as tools, a call answered with the fake model's reply, progress while it streams, the session and
usage kept as ``api``, a call that waits for an approval, refusals as tool errors, and our 401."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.chat.helpers import Streamed, attach, make_agent, make_tool, session_status, wait_for
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.mcp_server.conftest import token_of, with_session
from tests.support import ApiClient, LiveApp


def _text(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def _names(session: ClientSession) -> list[str]:
    return sorted(t.name for t in (await session.list_tools()).tools)


def test_the_tools_are_the_agents_the_tokens_user_may_use(
    admin: ApiClient, make_user: Callable[..., ApiClient], mcp_url: str, agent: dict[str, Any], model_id: int,
) -> None:
    member, outsider = make_user("member"), make_user("outsider")
    users = {u["username"]: u["id"] for u in admin.ok("GET", "/api/admin/users?pageSize=100")["items"]}
    team = admin.ok("POST", "/api/admin/groups", json={"name": "team"})["id"]
    admin.ok("PUT", f"/api/admin/groups/{team}/members", json=[users["member"]])
    nobody = admin.ok("POST", "/api/admin/groups", json={"name": "admins-only"})["id"]  # no member: admins alone
    make_agent(admin, "team-only", modelId=model_id, groupIds=[team])
    make_agent(admin, "back-office", modelId=model_id, groupIds=[nobody])
    make_agent(admin, "switched-off", modelId=model_id, enabled=False)

    assert with_session(mcp_url, token_of(outsider), _names) == ["ask_help_desk"]
    assert with_session(mcp_url, token_of(member), _names) == ["ask_help_desk", "ask_team_only"]
    assert with_session(mcp_url, token_of(admin), _names) == ["ask_back_office", "ask_help_desk", "ask_team_only"]

    async def listed(session: ClientSession) -> types.Tool:
        return (await session.list_tools()).tools[0]

    tool = with_session(mcp_url, token_of(outsider), listed)
    assert tool.description == "Answers questions."
    assert tool.input_schema["required"] == ["message"]
    assert tool.input_schema["properties"]["message"]["type"] == "string"

    # a hidden agent's tool answers as one that does not exist
    async def both(session: ClientSession) -> tuple[types.CallToolResult, types.CallToolResult]:
        hidden = await session.call_tool("ask_team_only", {"message": "hi"})
        unknown = await session.call_tool("ask_nobody", {"message": "hi"})
        assert isinstance(hidden, types.CallToolResult) and isinstance(unknown, types.CallToolResult)
        return hidden, unknown

    hidden, unknown = with_session(mcp_url, token_of(outsider), both)
    assert hidden.is_error and unknown.is_error
    assert _text(hidden) == "Unknown tool: ask_team_only" and _text(unknown) == "Unknown tool: ask_nobody"


def test_a_call_runs_a_turn_answered_with_the_reply_and_kept_as_an_api_session(
    app: LiveApp, user: ApiClient, token: str, mcp_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    fake_model.push(text("Paris it is.", input_tokens=12, output_tokens=4))

    async def ask(session: ClientSession) -> types.CallToolResult:
        result = await session.call_tool("ask_help_desk", {"message": "Capital of France?"})
        assert isinstance(result, types.CallToolResult)
        return result

    result = with_session(mcp_url, token, ask)
    assert not result.is_error and _text(result) == "Paris it is."
    sent = fake_model.requests[-1]["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [
        ("system", "You are help-desk."), ("user", "Capital of France?")]
    sid = user.ok("GET", "/api/agent-sessions?source=api")["items"][0]["id"]
    detail = user.ok("GET", f"/api/agent-sessions/{sid}")
    assert [(m["role"], m["content"]) for m in detail["messages"]] == [
        ("user", "Capital of France?"), ("assistant", "Paris it is.")]
    assert {r[0] for r in app.sql("SELECT source FROM agent_messages WHERE session_id = ?", (sid,))} == {"api"}
    assert app.sql("SELECT source, input_tokens, output_tokens, session_id FROM usage_records") == [
        ("api", 12, 4, sid)]


def test_progress_notifications_carry_the_reply_as_it_streams(
    token: str, mcp_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    fake_model.push(text("one two three four", delay=0.05))
    seen: list[tuple[float, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async def ask(session: ClientSession) -> types.CallToolResult:
        result = await session.call_tool("ask_help_desk", {"message": "count"}, progress_callback=on_progress)
        assert isinstance(result, types.CallToolResult)
        return result

    result = with_session(mcp_url, token, ask)
    assert _text(result) == "one two three four"
    assert len(seen) > 1  # as it came, not in one piece at the end
    assert "".join(m or "" for _, m in seen) == "one two three four"
    progress = [p for p, _ in seen]
    assert progress == sorted(set(progress)) and progress[-1] == len("one two three four")


def test_a_call_that_needs_approval_ends_with_the_chats_link(
    app: LiveApp, user: ApiClient, admin: ApiClient, token: str, mcp_url: str, agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    tool = make_tool(admin, "guard", "test-guarded")
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0, "needsApproval": True})
    fake_model.push(Step(text="Let me do that.", tool_calls=[ToolCall("guard", {"action": "read"}, id="ap1")]))

    async def ask(session: ClientSession) -> types.CallToolResult:
        result = await session.call_tool("ask_help_desk", {"message": "act"})
        assert isinstance(result, types.CallToolResult)
        return result

    result = with_session(mcp_url, token, ask)
    sid = user.ok("GET", "/api/agent-sessions?source=api")["items"][0]["id"]
    said = _text(result)
    assert not result.is_error
    assert said.startswith("Let me do that.\n\nThe call of guard waits for approval in the chat at ")
    assert f"{app.url}/chat/{sid}" in said
    assert session_status(app, sid) == "awaiting_approval"
    fake_model.push(text("Done."))
    resumed = user.post(f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "ap1", "approved": True})
    assert resumed.status_code == 200 and Streamed(resumed).text == "Done."


def test_refusals_are_tool_errors(
    app: LiveApp, admin: ApiClient, token: str, mcp_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    alice = int(app.sql("SELECT id FROM users WHERE username = 'alice'")[0][0])
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice, "period": "day",
                                                 "maxTokens": 5, "maxCost": None})
    echo = fake_model.default
    fake_model.default = lambda _body: Step(error_status=400, error_message="the model broke")

    async def calls(session: ClientSession) -> list[types.CallToolResult]:
        out = []
        for args in ({"message": "   "}, {"text": "no message"}, {"message": "breaks"}):
            result = await session.call_tool("ask_help_desk", args)
            assert isinstance(result, types.CallToolResult)
            out.append(result)
        fake_model.default = echo
        fake_model.push(text("uses the budget up", input_tokens=10, output_tokens=5))
        out.append(await session.call_tool("ask_help_desk", {"message": "first"}))  # type: ignore[arg-type]
        out.append(await session.call_tool("ask_help_desk", {"message": "more"}))  # type: ignore[arg-type]
        return out

    blank, missing, broken, first, over = with_session(mcp_url, token, calls)
    assert blank.is_error and missing.is_error
    assert _text(blank) == _text(missing) == "The argument 'message' must be a string with text"
    assert broken.is_error and "did not finish its reply" in _text(broken)
    assert not first.is_error
    assert over.is_error and "budget" in _text(over)


def test_without_a_valid_token_it_is_our_401(app: LiveApp, user: ApiClient, mcp_url: str) -> None:
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    for headers in ({}, {"Authorization": "Bearer not-a-token"}):
        for method in ("POST", "GET"):
            refused = httpx.request(method, mcp_url, json=body if method == "POST" else None,
                                    headers={**headers, "Accept": "application/json, text/event-stream"})
            assert refused.status_code == 401, refused.text
            assert refused.headers["www-authenticate"] == "Bearer"
            error = refused.json()["error"]
            assert error["code"] in ("missing_api_key", "invalid_api_key")
            assert error["requestId"] == refused.headers["x-request-id"]
    # a signed-in browser's cookie is no API token
    assert user.post("/mcp", json=body).status_code == 401


def test_get_is_refused_as_a_stateless_server_refuses_it(token: str, mcp_url: str) -> None:
    """Without sessions there is no server stream to hold open: 405, as the transport allows, at once."""
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    refused = httpx.get(mcp_url, headers=headers, timeout=5)
    assert refused.status_code == 405 and refused.headers["allow"] == "POST"
    assert refused.json()["error"]["code"] == "method_not_allowed"


def test_the_sdks_client_on_the_stateless_2026_protocol_gets_the_same(
    token: str, mcp_url: str, agent: dict[str, Any], fake_model: FakeModel,
) -> None:
    """The SDK's high-level ``Client`` negotiates the 2026-07-28 protocol (``server/discover``, no
    handshake, each request on its own): the same tools, reply and progress as on the handshake."""
    fake_model.push(text("one two three", delay=0.05))
    seen: list[str | None] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(message)

    async def run() -> tuple[str, list[str], Any]:
        async with (httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
                    Client(streamable_http_client(mcp_url, http_client=http)) as client):
            names = [t.name for t in (await client.list_tools()).tools]
            result = await client.call_tool("ask_help_desk", {"message": "count"}, progress_callback=on_progress)
            return client.protocol_version, names, result

    version, names, result = asyncio.run(run())
    assert version == "2026-07-28" and names == ["ask_help_desk"]
    assert isinstance(result, types.CallToolResult) and _text(result) == "one two three"
    assert len(seen) > 1 and "".join(m or "" for m in seen) == "one two three"


def test_a_requests_log_line_names_the_route_and_the_tokens_user(
    user: ApiClient, token: str, mcp_url: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="agentloft.requests")
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "X-Request-ID": "mcp-line-1"}
    hello = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}
    assert httpx.post(mcp_url, json=body, headers=headers).status_code == 200
    (line,) = wait_for(lambda: [r for r in caplog.records  # logged once the stream has ended
                                if r.name == "agentloft.requests" and r.__dict__.get("requestId") == "mcp-line-1"])
    assert (line.method, line.route, line.status) == ("POST", "/mcp", 200)  # type: ignore[attr-defined]
    assert line.userId == str(user.ok("GET", "/api/auth/me")["id"])  # type: ignore[attr-defined]
