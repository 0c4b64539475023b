"""What a chat reads at its start (the caller, the agent, its model and tools) is kept between chats
(``agentloft.core.readcache``); an admin's change must reach the very next chat, and the very next request of
a user whose role or account changed. Each test warms the cache first, then changes, then checks."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import attach, chat, make_tool
from tests.fakes.openai_server import FakeModel, FakeModelServer
from tests.support import ApiClient


def _tool_names(fake_model: FakeModel) -> set[str]:
    return {t["function"]["name"] for t in fake_model.requests[-1].get("tools", [])}


def test_agent_and_model_edits_reach_the_next_chat(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    fake_model_server: FakeModelServer,
) -> None:
    chat(user, "helper", "one")
    chat(user, "helper", "two")
    assert fake_model.requests[-1]["messages"][0]["content"] == "You are helper."
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"systemPrompt": "You are renamed."})
    chat(user, "helper", "three")
    assert fake_model.requests[-1]["messages"][0]["content"] == "You are renamed."

    other = admin.ok("POST", "/api/admin/models", json={"name": "Other", "provider": "openai",
                                                        "baseUrl": fake_model_server.base_url, "model": "other"})
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"modelId": other["id"]})
    chat(user, "helper", "four")
    assert fake_model.requests[-1]["model"] == "other"
    admin.ok("PUT", f"/api/admin/models/{other['id']}", json={"model": "other-renamed"})
    chat(user, "helper", "five")
    assert fake_model.requests[-1]["model"] == "other-renamed"

    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"enabled": False})
    assert user.post("/api/agents/helper/chat", json={"message": "six"}).status_code == 404


def test_tool_visibility_changes_reach_the_next_chat(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel, test_tools: None
) -> None:
    """Hidden means hidden: a tool made admin-only leaves a user's very next chat; one taken off the agent
    leaves everyone's."""
    tool = make_tool(admin, "echo_tool", "test-echo")
    attach(admin, agent["id"], {"toolId": tool["id"]})
    chat(user, "helper", "warm")
    chat(user, "helper", "with tool")
    assert _tool_names(fake_model) == {"echo_tool"}

    admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"adminOnly": True})
    chat(user, "helper", "without tool")
    assert _tool_names(fake_model) == set()
    chat(admin, "helper", "admin still has it")
    assert _tool_names(fake_model) == {"echo_tool"}

    attach(admin, agent["id"])
    chat(admin, "helper", "detached")
    assert _tool_names(fake_model) == set()


def test_role_and_account_changes_reach_the_next_request(
    admin: ApiClient, make_user: Any, model_id: int, fake_model: FakeModel, test_tools: None
) -> None:
    make_tool(admin, "secret_tool", "test-echo", adminOnly=True)
    bob = make_user("bob", role="admin")
    bob_id = bob.ok("GET", "/api/auth/me")["id"]
    assert bob.get("/api/admin/users").status_code == 200
    bob.post("/api/llm/chat", json={"message": "as admin"})
    assert "secret_tool" in _tool_names(fake_model)

    admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"role": "user"})
    assert bob.get("/api/admin/users").status_code == 403
    bob.post("/api/llm/chat", json={"message": "as user"})
    assert "secret_tool" not in _tool_names(fake_model)

    admin.ok("PATCH", f"/api/admin/users/{bob_id}", json={"disabled": True})
    assert bob.get("/api/auth/me").status_code == 401
    assert bob.post("/api/llm/chat", json={"message": "disabled"}).status_code == 401


def test_signing_out_ends_the_cookie_at_once(make_user: Any) -> None:
    carol = make_user("carol")
    assert carol.get("/api/auth/me").status_code == 200
    cookie = carol.cookies.get("agentloft_session")
    carol.ok("POST", "/api/auth/logout", status=204)
    carol.cookies.set("agentloft_session", cookie)  # a copy of the cookie kept elsewhere
    assert carol.get("/api/auth/me").status_code == 401
