"""Seed 001: admin-only tools are invisible to everyone but admins; disabled tools to everyone.

Over HTTP (``/api/llm/chat/tools``) and at the service level, since the chat engine (plain chat, agent
chat, A2A) only ever receives the lists these service functions return: a tool missing from them cannot
be called in that run at all.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentloft.tools import loading
from agentloft.tools.base import ToolContext
from agentloft.tools.runner import run_tool
from tests.support import ApiClient

ROLES_WITHOUT_ADMIN = ("user", None, "")


@pytest.fixture
def tools(make_tool: Callable[..., Any]) -> dict[str, dict[str, Any]]:
    made = [
        make_tool("public", description="For everyone"),
        make_tool("secret-op", adminOnly=True, needsApproval=True),
        make_tool("off", enabled=False),
        make_tool("secret-off", adminOnly=True, enabled=False),
    ]
    return {t["slug"]: t for t in made}


@pytest.fixture
def agent_id(admin: ApiClient, tools: dict[str, dict[str, Any]]) -> int:
    """An agent linked to all four tools, the admin-only one with an approval override."""
    agent = admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})
    links = [
        {"toolId": tools["secret-off"]["id"]},
        {"toolId": tools["secret-op"]["id"], "needsApproval": False},
        {"toolId": tools["off"]["id"]},
        {"toolId": tools["public"]["id"], "needsApproval": True},
    ]
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=links)
    return agent["id"]


def _names(client: ApiClient) -> list[str]:
    return [t["name"] for t in client.ok("GET", "/api/llm/chat/tools")["items"]]


def test_chat_tools_for_user_and_admin(
    admin: ApiClient, user: ApiClient, make_user: Callable[..., ApiClient], tools: dict[str, Any]
) -> None:
    assert _names(user) == ["public"]
    assert _names(admin) == ["public", "secret-op"]
    assert _names(make_user("root2", role="admin")) == ["public", "secret-op"]
    (item,) = user.ok("GET", "/api/llm/chat/tools")["items"]
    assert item["description"].startswith("For everyone") and "Echo text back" in item["description"]
    assert item["inputSchema"]["properties"]["text"]["type"] == "string"


def test_toggling_admin_only_and_enabled_shows_at_once(
    admin: ApiClient, user: ApiClient, tools: dict[str, Any]
) -> None:
    admin.ok("PUT", f"/api/agent-tools/{tools['secret-op']['id']}", json={"adminOnly": False})
    assert _names(user) == ["public", "secret-op"]
    admin.ok("PUT", f"/api/agent-tools/{tools['public']['id']}", json={"adminOnly": True})
    assert _names(user) == ["secret-op"]
    admin.ok("PUT", f"/api/agent-tools/{tools['secret-op']['id']}", json={"enabled": False})
    assert _names(user) == [] and _names(admin) == ["public"]


def test_llm_tools_service_hides_admin_only_and_disabled(call_service: Callable[..., Any], tools: Any) -> None:
    for role in ROLES_WITHOUT_ADMIN:
        run_tools = call_service(
            lambda db, rt, role=role: loading.get_enabled_tools_for_llm(db=db, rt=rt, user_id=2, user_role=role)
        )
        assert [t.name for t in run_tools] == ["public"], role
    admin_tools = call_service(
        lambda db, rt: loading.get_enabled_tools_for_llm(db=db, rt=rt, user_id=1, user_role="admin")
    )
    assert [(t.name, t.needs_approval) for t in admin_tools] == [("public", False), ("secret-op", True)]
    assert admin_tools[0].id == tools["public"]["id"] and admin_tools[0].title == "Public"


def test_tool_infos_service_uses_the_same_filter(call_service: Callable[..., Any], tools: Any) -> None:
    for role in ROLES_WITHOUT_ADMIN:
        infos = call_service(
            lambda db, rt, role=role: loading.get_enabled_tool_infos(db=db, user_role=role, registry=rt.registry)
        )
        assert [i.slug for i in infos] == ["public"], role
    infos = call_service(lambda db, rt: loading.get_enabled_tool_infos(db=db, user_role="admin", registry=rt.registry))
    assert [(i.slug, i.admin_only, i.needs_approval) for i in infos] == [
        ("public", False, False), ("secret-op", True, True)]
    assert infos[1].model_dump(by_alias=True)["adminOnly"] is True


def test_agent_tools_service_hides_admin_only_and_disabled(
    call_service: Callable[..., Any], agent_id: int
) -> None:
    for role in ROLES_WITHOUT_ADMIN:
        run_tools = call_service(
            lambda db, rt, role=role: loading.load_tools_for_agent(db=db, rt=rt, agent_id=agent_id, user_role=role)
        )
        assert [(t.name, t.needs_approval) for t in run_tools] == [("public", True)], role
    admin_tools = call_service(
        lambda db, rt: loading.load_tools_for_agent(db=db, rt=rt, agent_id=agent_id, user_role="admin")
    )
    # in the agent's order, with the overrides: secret-op needs approval itself, the agent says no
    assert [(t.name, t.needs_approval) for t in admin_tools] == [("secret-op", False), ("public", True)]


def test_agent_without_tools_or_unknown_agent_has_none(call_service: Callable[..., Any], tools: Any) -> None:
    none = call_service(lambda db, rt: loading.load_tools_for_agent(db=db, rt=rt, agent_id=999, user_role="admin"))
    assert none == []


def test_loaded_tools_run_with_decrypted_config(call_service: Callable[..., Any], make_tool: Any) -> None:
    make_tool("keyed", config={"apiKey": "sk-abc"})

    async def load_and_run(db: Any, rt: Any) -> Any:
        (tool,) = await loading.get_enabled_tools_for_llm(db=db, rt=rt, user_id=2, user_role="user")
        ctx = ToolContext(runtime=rt, tool_id=tool.id, tool_slug=tool.name, user_id=2, user_role="user")
        return tool, await run_tool(tool, {"text": "hi"}, ctx)

    tool, result = call_service(load_and_run)
    assert result.success and result.data["apiKey"] == "sk-abc" and result.data["approved"] is False
    assert tool.timeout_s == pytest.approx(1.0 + loading.TIMEOUT_GRACE_S)  # the config's timeoutMs + grace


def test_tool_of_an_unregistered_type_is_left_out_not_fatal(
    call_service: Callable[..., Any], make_tool: Any
) -> None:
    make_tool("calc", type="calculator")
    make_tool("orphan")  # its add-on type is missing from the runtime below
    tools = call_service(
        lambda db, rt: loading.get_enabled_tools_for_llm(db=db, rt=rt, user_id=1, user_role="admin"), with_addon=False
    )
    assert [t.name for t in tools] == ["calc"]


def test_chat_tools_for_an_agent(admin: ApiClient, user: ApiClient, agent_id: int) -> None:
    items = user.ok("GET", "/api/llm/chat/tools?agent=helper")["items"]
    assert [(t["name"], t["needsApproval"], t["title"]) for t in items] == [("public", True, "Public")]
    items = admin.ok("GET", "/api/llm/chat/tools?agent=helper")["items"]
    assert [(t["name"], t["needsApproval"]) for t in items] == [("secret-op", False), ("public", True)]
    r = user.get("/api/llm/chat/tools?agent=nobody")
    assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"
    admin.ok("PUT", f"/api/admin/agents/{agent_id}", json={"enabled": False})
    assert user.get("/api/llm/chat/tools?agent=helper").status_code == 404
