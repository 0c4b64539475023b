"""An agent's tools: set and list with per-agent approval overrides, validation, cascades."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support import ApiClient, LiveApp


@pytest.fixture
def agent_id(admin: ApiClient) -> int:
    return admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})["id"]


def _url(agent_id: int) -> str:
    return f"/api/admin/agents/{agent_id}/tools"


def test_set_and_list_with_overrides(
    app: LiveApp, admin: ApiClient, agent_id: int, make_tool: Callable[..., Any]
) -> None:
    plain = make_tool("plain")
    careful = make_tool("careful", needsApproval=True)
    body = admin.ok("PUT", _url(agent_id), json=[
        {"toolId": careful["id"], "needsApproval": None, "position": 2},
        {"toolId": plain["id"], "needsApproval": True, "position": 1},
    ])
    assert body == admin.ok("GET", _url(agent_id))
    assert body["total"] == 2 and body["hasMore"] is False
    first, second = body["items"]
    assert (first["toolId"], first["needsApproval"], first["effectiveNeedsApproval"]) == (plain["id"], True, True)
    assert (second["toolId"], second["needsApproval"], second["effectiveNeedsApproval"]) == (
        careful["id"], None, True)
    assert first["slug"] == "plain" and first["position"] == 1 and first["type"] == "test-echo"
    rows = app.sql("SELECT tool_id, needs_approval, position FROM agent_tool_associations ORDER BY position")
    assert rows == [(plain["id"], 1, 1), (careful["id"], None, 2)]

    # an override can also relax the tool's own rule
    body = admin.ok("PUT", _url(agent_id), json=[{"toolId": careful["id"], "needsApproval": False}])
    (only,) = body["items"]
    assert only["needsApproval"] is False and only["effectiveNeedsApproval"] is False and only["position"] == 0


def test_put_replaces_and_positions_default_to_order(
    admin: ApiClient, agent_id: int, make_tool: Callable[..., Any]
) -> None:
    a, b, c = (make_tool(s) for s in ("a", "b", "c"))
    admin.ok("PUT", _url(agent_id), json=[{"toolId": a["id"]}, {"toolId": b["id"]}])
    body = admin.ok("PUT", _url(agent_id), json=[{"toolId": c["id"]}, {"toolId": a["id"]}])
    assert [(t["slug"], t["position"]) for t in body["items"]] == [("c", 0), ("a", 1)]
    assert admin.ok("PUT", _url(agent_id), json=[])["items"] == []


def test_unknown_or_repeated_tool_is_422_and_changes_nothing(
    admin: ApiClient, agent_id: int, make_tool: Callable[..., Any]
) -> None:
    a = make_tool("a")
    admin.ok("PUT", _url(agent_id), json=[{"toolId": a["id"]}])
    r = admin.put(_url(agent_id), json=[{"toolId": a["id"]}, {"toolId": "at_nope"}])
    assert r.status_code == 422 and r.json()["error"]["fields"] == {"1.toolId": "no such tool 'at_nope'"}
    r = admin.put(_url(agent_id), json=[{"toolId": a["id"]}, {"toolId": a["id"]}])
    assert r.status_code == 422 and "1.toolId" in r.json()["error"]["fields"]
    r = admin.put(_url(agent_id), json=[{"tool": a["id"]}])
    assert r.status_code == 422
    assert [t["slug"] for t in admin.ok("GET", _url(agent_id))["items"]] == ["a"]


def test_unknown_agent_is_404(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    tool = make_tool("a")
    for r in (admin.get(_url(999)), admin.put(_url(999), json=[{"toolId": tool["id"]}])):
        assert r.status_code == 404 and r.json()["error"]["code"] == "agent_not_found"


def test_deleting_a_tool_or_agent_removes_its_links(
    app: LiveApp, admin: ApiClient, agent_id: int, make_tool: Callable[..., Any]
) -> None:
    a, b = make_tool("a"), make_tool("b")
    admin.ok("PUT", _url(agent_id), json=[{"toolId": a["id"]}, {"toolId": b["id"]}])
    admin.ok("DELETE", f"/api/agent-tools/{a['id']}", status=204)
    assert [t["slug"] for t in admin.ok("GET", _url(agent_id))["items"]] == ["b"]
    admin.ok("DELETE", f"/api/admin/agents/{agent_id}", status=204)
    assert app.sql("SELECT count(*) FROM agent_tool_associations") == [(0,)]
    assert app.sql("SELECT slug FROM agent_tools") == [("b",)]


def test_tool_changes_show_through_the_link(admin: ApiClient, agent_id: int, make_tool: Callable[..., Any]) -> None:
    a = make_tool("a")
    admin.ok("PUT", _url(agent_id), json=[{"toolId": a["id"]}])
    admin.ok("PUT", f"/api/agent-tools/{a['id']}", json={"needsApproval": True, "adminOnly": True, "enabled": False})
    (link,) = admin.ok("GET", _url(agent_id))["items"]
    assert link["needsApproval"] is None and link["effectiveNeedsApproval"] is True
    assert link["adminOnly"] is True and link["enabled"] is False
