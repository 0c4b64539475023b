"""Admin tool management over HTTP: CRUD, validation, conflicts, access rules, adminOnly storage."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support import ApiClient, LiveApp


def test_create_read_list_update_delete(app: LiveApp, admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    created = make_tool("calc", name="Calc", description="Sums", config={"timeoutMs": 500})
    assert created["id"].startswith("at_") and created["type"] == "test-echo"
    assert created["config"] == {"endpoint": "https://example.org/api", "timeoutMs": 500}
    assert created["enabled"] is True and created["needsApproval"] is False and created["adminOnly"] is False
    assert admin.ok("GET", f"/api/agent-tools/{created['id']}") == created

    listed = admin.ok("GET", "/api/agent-tools")
    assert listed["total"] == 1 and listed["items"] == [created] and listed["hasMore"] is False

    updated = admin.ok("PUT", f"/api/agent-tools/{created['id']}",
                       json={"name": "Calculator", "enabled": False, "needsApproval": True})
    assert (updated["name"], updated["enabled"], updated["needsApproval"]) == ("Calculator", False, True)
    assert updated["config"]["timeoutMs"] == 500 and updated["slug"] == "calc"

    admin.ok("DELETE", f"/api/agent-tools/{created['id']}", status=204)
    r = admin.get(f"/api/agent-tools/{created['id']}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "tool_not_found"
    assert app.sql("SELECT count(*) FROM agent_tools") == [(0,)]


def test_config_defaults_are_filled_and_stored(app: LiveApp, make_tool: Callable[..., Any]) -> None:
    created = make_tool("calc")
    assert created["config"] == {"endpoint": "https://example.org/api", "timeoutMs": 1000}
    stored = app.sql("SELECT config FROM agent_tools WHERE id = ?", (created["id"],))
    assert json.loads(stored[0][0]) == created["config"]


def test_builtin_type_gets_its_defaults(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    types = {t["slug"]: t for t in admin.ok("GET", "/api/agent-tools/types?pageSize=100")["items"]}
    assert make_tool("calc", type="calculator")["config"] == types["calculator"]["defaults"]


def test_invalid_config_is_422_with_field_path(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    r = admin.post("/api/agent-tools", json={"slug": "e", "name": "E", "type": "test-echo",
                                             "config": {"timeoutMs": 0}})
    assert r.status_code == 422
    err = r.json()["error"]
    assert err["code"] == "validation_error" and err["fields"] == {
        "config.timeoutMs": "Input should be greater than or equal to 1"
    }

    r = admin.post("/api/agent-tools", json={"slug": "e", "name": "E", "type": "test-echo",
                                             "config": {"nope": 1}})
    assert r.status_code == 422 and "config.nope" in r.json()["error"]["fields"]

    tool = make_tool("calc")
    r = admin.put(f"/api/agent-tools/{tool['id']}", json={"config": {"timeoutMs": "many"}})
    assert r.status_code == 422 and list(r.json()["error"]["fields"]) == ["config.timeoutMs"]
    assert admin.ok("GET", f"/api/agent-tools/{tool['id']}") == tool  # nothing changed


def test_web_search_cannot_be_enabled_without_its_searxng_url(app: LiveApp, admin: ApiClient) -> None:
    """Switched on without its URL every search the model tries fails: the admin is told at once instead."""
    body = {"slug": "search", "name": "Search", "type": "web-search"}
    r = admin.post("/api/agent-tools", json=body)
    assert r.status_code == 422
    assert r.json()["error"]["fieldCodes"] == {"config.baseUrl": {"code": "required_to_enable"}}
    tool = admin.ok("POST", "/api/agent-tools", json={**body, "enabled": False})  # set up later: fine
    r = admin.put(f"/api/agent-tools/{tool['id']}", json={"enabled": True})
    assert r.status_code == 422 and list(r.json()["error"]["fields"]) == ["config.baseUrl"]
    assert app.sql("SELECT enabled FROM agent_tools WHERE slug = 'search'") == [(0,)]
    done = admin.ok("PUT", f"/api/agent-tools/{tool['id']}",
                    json={"enabled": True, "config": {"baseUrl": "http://searxng:8080"}})
    assert done["enabled"] is True and done["config"]["baseUrl"] == "http://searxng:8080"
    # A webhook's URL is a secret (stored encrypted, never returned): it counts all the same.
    hook = {"slug": "hook", "name": "Hook", "type": "webhook"}
    r = admin.post("/api/agent-tools", json=hook)
    assert r.status_code == 422 and list(r.json()["error"]["fields"]) == ["config.url"]
    made = admin.ok("POST", "/api/agent-tools", json={**hook, "config": {"url": "https://hooks.example.com/x"}})
    assert made["enabled"] is True and made["secretsSet"] == ["url"]
    assert admin.ok("PUT", f"/api/agent-tools/{made['id']}", json={"name": "Hook 2"})["name"] == "Hook 2"


def test_unknown_type_and_bad_fields_are_422(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    r = admin.post("/api/agent-tools", json={"slug": "x", "name": "X", "type": "no-such-type"})
    assert r.status_code == 422 and r.json()["error"]["fields"] == {"type": "unknown tool type 'no-such-type'"}

    r = admin.post("/api/agent-tools", json={"slug": "Bad Slug!", "name": "", "type": "test-echo"})
    assert r.status_code == 422 and {"slug", "name"} <= set(r.json()["error"]["fields"])

    tool = make_tool("calc")
    r = admin.put(f"/api/agent-tools/{tool['id']}", json={"type": "no-such-type"})
    assert r.status_code == 422 and "type" in r.json()["error"]["fields"]


def test_duplicate_slug_is_409(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    make_tool("calc")
    r = admin.post("/api/agent-tools", json={"slug": "calc", "name": "Other", "type": "test-echo"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "tool_slug_taken"

    other = make_tool("calc2")
    r = admin.put(f"/api/agent-tools/{other['id']}", json={"slug": "calc"})
    assert r.status_code == 409
    # keeping one's own slug is not a conflict
    admin.ok("PUT", f"/api/agent-tools/{other['id']}", json={"slug": "calc2", "name": "Renamed"})


def test_admin_only_is_boolean_in_json_and_0_1_in_db(
    app: LiveApp, admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    everyone = make_tool("calc")
    hidden = make_tool("calc-admin", adminOnly=True)
    assert everyone["adminOnly"] is False and hidden["adminOnly"] is True
    rows = dict(app.sql("SELECT slug, admin_only FROM agent_tools"))
    assert rows == {"calc": 0, "calc-admin": 1}
    typeof = "pg_typeof(admin_only)::text" if app.database_url else "typeof(admin_only)"
    assert app.sql(f"SELECT {typeof} FROM agent_tools") == [("integer",), ("integer",)]

    flipped = admin.ok("PUT", f"/api/agent-tools/{hidden['id']}", json={"adminOnly": False})
    assert flipped["adminOnly"] is False
    admin.ok("PUT", f"/api/agent-tools/{everyone['id']}", json={"adminOnly": True})
    assert dict(app.sql("SELECT slug, admin_only FROM agent_tools")) == {"calc": 1, "calc-admin": 0}
    # an update that does not mention adminOnly leaves it alone
    admin.ok("PUT", f"/api/agent-tools/{everyone['id']}", json={"name": "Still hidden"})
    assert admin.ok("GET", f"/api/agent-tools/{everyone['id']}")["adminOnly"] is True


def test_admin_only_column_defaults_to_0_in_sql(app: LiveApp, admin: ApiClient) -> None:
    if app.database_url:  # PostgreSQL
        default = app.sql("SELECT column_default, is_nullable = 'NO' FROM information_schema.columns "
                          "WHERE table_name = 'agent_tools' AND column_name = 'admin_only'")
        assert default == [("0", True)]
        return
    default = app.sql("SELECT dflt_value, \"notnull\" FROM pragma_table_info('agent_tools') "
                      "WHERE name = 'admin_only'")
    assert default == [("0", 1)]


def _endpoints(tool_id: str, agent_id: int) -> list[tuple[str, str, Any]]:
    return [
        ("GET", "/api/agent-tools/types", None),
        ("GET", "/api/agent-tools", None),
        ("POST", "/api/agent-tools", {"slug": "z", "name": "Z", "type": "calculator"}),
        ("GET", f"/api/agent-tools/{tool_id}", None),
        ("PUT", f"/api/agent-tools/{tool_id}", {"name": "Taken over"}),
        ("DELETE", f"/api/agent-tools/{tool_id}", None),
        ("POST", f"/api/agent-tools/{tool_id}/execute", {"input": {"expression": "1+1"}}),
        ("GET", f"/api/admin/agents/{agent_id}/tools", None),
        ("PUT", f"/api/admin/agents/{agent_id}/tools", [{"toolId": tool_id}]),
    ]


def test_non_admin_gets_403_everywhere(
    app: LiveApp, admin: ApiClient, user: ApiClient, make_tool: Callable[..., Any]
) -> None:
    tool = make_tool("calc")
    agent = admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})
    for method, url, body in _endpoints(tool["id"], agent["id"]):
        r = user.request(method, url, json=body)
        assert r.status_code == 403, (method, url, r.text)
        assert r.json()["error"]["code"] == "admin_required"
    assert app.sql("SELECT slug, name FROM agent_tools") == [("calc", "Calc")]
    assert app.sql("SELECT count(*) FROM agent_tool_associations") == [(0,)]


def test_anonymous_gets_401_everywhere(anon: ApiClient, admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    tool = make_tool("calc")
    agent = admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})
    for method, url, body in [*_endpoints(tool["id"], agent["id"]), ("GET", "/api/llm/chat/tools", None)]:
        r = anon.request(method, url, json=body)
        assert r.status_code == 401, (method, url, r.text)
        assert r.json()["error"]["code"] == "not_authenticated"


@pytest.mark.parametrize("needs_approval", [True, False])
def test_needs_approval_round_trip(make_tool: Callable[..., Any], needs_approval: bool) -> None:
    assert make_tool("calc", needsApproval=needs_approval)["needsApproval"] is needs_approval


def test_pagination(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    for i in range(3):
        make_tool(f"calc{i}", name=f"Calc {i}")
    page = admin.ok("GET", "/api/agent-tools?page=2&pageSize=2")
    assert page["total"] == 3 and page["page"] == 2 and page["pageSize"] == 2 and page["hasMore"] is False
    assert [t["slug"] for t in page["items"]] == ["calc2"]
