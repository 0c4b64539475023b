"""Seed 001 end to end through the chat engine and the fake model server: the model of a user gets
exactly ``/api/llm/chat/tools``, and a call a user's model forges for a hidden or disabled tool is
refused without running it, while an admin's runs."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient
from tests.tools import addon


@pytest.fixture
def tools(make_tool: Callable[..., Any]) -> None:
    make_tool("public", description="For everyone")
    make_tool("secret-op", adminOnly=True)
    make_tool("off", enabled=False)


def _chat(client: ApiClient, message: str) -> None:
    """Run one plain LLM chat turn; the SSE answer ends when the run ends."""
    res = client.post("/api/llm/chat", json={"message": message})
    assert res.status_code == 200, res.text
    assert res.text.rstrip().endswith("data: [DONE]")


def _sent_tools(fake_model: FakeModel) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in fake_model.requests[-1].get("tools", [])}


def _tool_messages(fake_model: FakeModel) -> list[str]:
    return [str(m.get("content")) for m in fake_model.requests[-1]["messages"] if m.get("role") == "tool"]


@pytest.mark.parametrize("who", ["user", "admin"])
def test_model_sees_exactly_the_listed_tools(
    request: pytest.FixtureRequest, who: str, model_id: int, fake_model: FakeModel, tools: None
) -> None:
    client: ApiClient = request.getfixturevalue(who)
    listed = client.ok("GET", "/api/llm/chat/tools")["items"]
    fake_model.push(text("ok"))
    _chat(client, "hello")
    sent = _sent_tools(fake_model)
    assert sorted(sent) == [t["name"] for t in listed]
    assert sorted(sent) == (["public"] if who == "user" else ["public", "secret-op"])
    for item in listed:
        assert sent[item["name"]]["description"] == item["description"]
        params = sent[item["name"]]["parameters"]  # the provider drops "title"s, nothing else
        assert set(params["properties"]) == set(item["inputSchema"]["properties"])
        assert params.get("required") == item["inputSchema"].get("required")


@pytest.mark.parametrize("forged", ["secret-op", "off"])
def test_forged_call_to_a_hidden_tool_is_refused_unrun(
    user: ApiClient, model_id: int, fake_model: FakeModel, tools: None, forged: str
) -> None:
    fake_model.push(call(forged, {"text": "leak"}), text("could not"))
    _chat(user, "try it")
    assert addon.CALLS == []
    (reply,) = _tool_messages(fake_model)
    assert json.loads(reply) == {"error": f"Unknown tool name: '{forged}'. Available tools: 'public'"}


def test_admin_call_to_admin_only_tool_runs(
    admin: ApiClient, model_id: int, fake_model: FakeModel, tools: None
) -> None:
    fake_model.push(call("secret-op", {"text": "hi"}), text("done"))
    _chat(admin, "use it")
    assert addon.CALLS == ["secret-op"]
    (reply,) = _tool_messages(fake_model)
    result = json.loads(reply)
    assert result["success"] is True and result["data"]["text"] == "hi" and result["data"]["userRole"] == "admin"


@pytest.mark.parametrize("who", ["user", "admin"])
def test_agent_chat_model_sees_exactly_the_agents_listed_tools(
    request: pytest.FixtureRequest, who: str, admin: ApiClient, model_id: int, fake_model: FakeModel, tools: None
) -> None:
    by_slug = {t["slug"]: t["id"] for t in admin.ok("GET", "/api/agent-tools")["items"]}
    agent = admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools",
             json=[{"toolId": by_slug[s]} for s in ("secret-op", "off", "public")])
    client: ApiClient = request.getfixturevalue(who)
    listed = [t["name"] for t in client.ok("GET", "/api/llm/chat/tools?agent=helper")["items"]]
    fake_model.push(text("ok"))
    res = client.post("/api/agents/helper/chat", json={"message": "hello"})
    assert res.status_code == 200 and res.text.rstrip().endswith("data: [DONE]")
    assert sorted(_sent_tools(fake_model)) == sorted(listed)
    assert listed == (["public"] if who == "user" else ["secret-op", "public"])
