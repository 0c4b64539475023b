"""The MCP server admin API against a real MCP server (the SDK's ``MCPServer`` over streamable HTTP):
adding, secrets that are never returned, refreshing tools into ``agent_tools`` rows, slugs, disappearing
and changing tools, and who may do any of it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support import ApiClient, LiveApp
from tests.tools.mcp.conftest import TOKEN, HttpPeer, tools_by_name

Add = Callable[..., dict[str, Any]]


def test_add_refresh_and_tools_start_disabled(
    app: LiveApp, admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add
) -> None:
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN, headers={"X-Team": "blue"})
    assert server["secretSet"] is True and "secret" not in server
    assert server["headers"] == {"X-Team": "•••"}
    stored = app.sql("SELECT secret_enc, headers_enc FROM mcp_servers")[0]
    assert TOKEN not in str(stored) and "blue" not in str(stored)

    page = admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh")
    tools = tools_by_name(page)
    assert {"shout", "add", "weather", "picture", "note", "broken", "grow", "shrink", "whoami"} <= set(tools)
    shout = tools["shout"]
    assert shout["slug"] == "testing__shout"
    assert shout["description"] == "Echo the text back, upper-cased when asked."
    assert shout["inputSchema"]["required"] == ["text"]
    assert not shout["enabled"] and not shout["missing"]
    # the server saw the secret and the header
    assert mcp_http.guard.headers[-1]["authorization"] == f"Bearer {TOKEN}"
    assert mcp_http.guard.headers[-1]["x-team"] == "blue"

    # each tool is an ordinary tool row of type mcp, disabled until an admin enables it
    row = admin.ok("GET", f"/api/agent-tools/{shout['toolId']}")
    assert row["type"] == "mcp" and row["enabled"] is False
    assert row["config"]["serverId"] == server["id"] and row["config"]["toolName"] == "shout"
    listed = admin.ok("GET", f"/api/admin/mcp-servers/{server['id']}")
    assert listed["toolCount"] == len(tools) and listed["serverInfo"]["name"] == "testing"
    assert listed["lastError"] is None and listed["refreshedAt"]


def test_refresh_is_idempotent_and_keeps_admin_choices(
    admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add
) -> None:
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    admin.ok("PUT", f"/api/agent-tools/{tools['add']['toolId']}",
             json={"enabled": True, "adminOnly": True, "needsApproval": True})
    again = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    assert {t["toolId"] for t in again.values()} == {t["toolId"] for t in tools.values()}
    assert again["add"]["enabled"] and again["add"]["adminOnly"] and again["add"]["needsApproval"]


def test_wrong_secret_is_a_clear_failure(
    admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add
) -> None:
    server = add_server(transport="http", url=mcp_http.url, secret="not-the-token-3141")
    r = admin.post(f"/api/admin/mcp-servers/{server['id']}/refresh")
    assert r.status_code == 502, r.text
    error = r.json()["error"]
    assert error["code"] == "mcp_server_failed" and "401" in error["message"], error
    assert "3141" not in error["message"]
    assert admin.ok("GET", f"/api/admin/mcp-servers/{server['id']}")["lastError"]


def test_the_network_guard_covers_mcp_servers(admin: ApiClient, mcp_http: HttpPeer, add_server: Add) -> None:
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    r = admin.post(f"/api/admin/mcp-servers/{server['id']}/refresh")
    assert r.status_code == 502
    assert "blocked: 127.0.0.1 is a loopback address" in r.json()["error"]["message"]
    assert mcp_http.guard.headers == [], "nothing reached the server"


def test_mcp_tools_are_not_created_by_hand(
    admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add
) -> None:
    """MCP tools come from a server's refresh: the types listing says so, and the API refuses to create
    one (or to turn another tool into one), while an MCP tool's own config stays editable."""
    types = {t["slug"]: t for t in admin.ok("GET", "/api/agent-tools/types?pageSize=100")["items"]}
    assert types["mcp"]["creatable"] is False
    assert types["calculator"]["creatable"] is True
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    config = {"serverId": server["id"], "toolName": "add"}
    r = admin.post("/api/agent-tools", json={"slug": "by-hand", "name": "By hand", "type": "mcp", "config": config})
    assert r.status_code == 422, r.text
    assert r.json()["error"]["code"] == "tool_type_not_creatable"
    assert "MCP server" in r.json()["error"]["message"] and "type" in r.json()["error"]["fields"]
    assert all(t["slug"] != "by-hand" for t in admin.ok("GET", "/api/agent-tools?pageSize=100")["items"])

    calc = admin.ok("POST", "/api/agent-tools", json={"slug": "calc", "name": "Calc", "type": "calculator"})
    r = admin.put(f"/api/agent-tools/{calc['id']}", json={"type": "mcp", "config": config})
    assert r.status_code == 422 and r.json()["error"]["code"] == "tool_type_not_creatable"
    assert admin.ok("GET", f"/api/agent-tools/{calc['id']}")["type"] == "calculator"

    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    row = admin.ok("GET", f"/api/agent-tools/{tools['add']['toolId']}")
    edited = admin.ok("PUT", f"/api/agent-tools/{row['id']}",
                      json={"type": "mcp", "config": {**row["config"], "timeoutSeconds": 5}})
    assert edited["config"]["timeoutSeconds"] == 5


@pytest.mark.parametrize(("transport", "field"), [("http", "url"), ("stdio", "command")])
def test_a_server_without_its_endpoint_names_the_missing_field(
    admin: ApiClient, transport: str, field: str
) -> None:
    """The form shows the message next to the field: on create as on update."""
    r = admin.post("/api/admin/mcp-servers", json={"slug": "bare", "name": "Bare", "transport": transport})
    assert r.status_code == 422, r.text
    assert list(r.json()["error"]["fields"]) == [field]
    assert r.json()["error"]["message"].startswith(f"{field}: ")
    assert admin.ok("GET", "/api/admin/mcp-servers")["items"] == []


def test_a_taken_slug_is_409(admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add) -> None:
    add_server(transport="http", url=mcp_http.url)
    other = add_server("other", transport="http", url=mcp_http.url)
    again = admin.post("/api/admin/mcp-servers", json={"slug": "testing", "name": "Again", "transport": "http",
                                                       "url": mcp_http.url})
    assert again.status_code == 409 and again.json()["error"]["code"] == "mcp_server_slug_taken"
    renamed = admin.put(f"/api/admin/mcp-servers/{other['id']}", json={"slug": "testing"})
    assert renamed.status_code == 409 and renamed.json()["error"]["code"] == "mcp_server_slug_taken"
    assert admin.ok("PUT", f"/api/admin/mcp-servers/{other['id']}", json={"slug": "other"})["slug"] == "other"
