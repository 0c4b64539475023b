"""The admin debug endpoint runs a stored tool through the shared wrapper and returns its ToolResult."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support import ApiClient, LiveApp
from tests.tools import addon


def _execute(admin: ApiClient, tool_id: str, input: Any) -> dict[str, Any]:
    return admin.ok("POST", f"/api/agent-tools/{tool_id}/execute", json={"input": input})


def test_execute_calculator(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    tool = make_tool("calc", type="calculator")
    result = _execute(admin, tool["id"], {"expression": "2 * (3 + 4)"})
    assert result["success"] is True and result["error"] is None
    assert result["data"]["result"] == 14
    assert isinstance(result["metadata"]["durationMs"], int)


def test_bad_input_is_a_failed_result_not_an_http_error(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    tool = make_tool("calc", type="calculator")
    result = _execute(admin, tool["id"], {"expr": "1"})
    assert result["success"] is False and "expression" in result["error"]
    assert "durationMs" in result["metadata"]


def test_execute_runs_as_the_admin_even_when_disabled_or_admin_only(
    admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    me = admin.ok("GET", "/api/auth/me")
    tool = make_tool("echo", enabled=False, adminOnly=True)
    data = _execute(admin, tool["id"], {"text": "ping"})["data"]
    assert data == {"text": "ping", "apiKey": "", "userId": me["id"], "userRole": "admin",
                    "approved": False, "toolSlug": "echo"}


def test_a_tool_that_needs_approval_runs_only_once_approved(
    admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    """Seed 000: ``approved`` is true only for a call that was approved; the debug runner is no exception."""
    tool = make_tool("echo", needsApproval=True)
    before = len(addon.CALLS)
    for body in ({"input": {"text": "ping"}}, {"input": {"text": "ping"}, "approved": False}):
        result = admin.ok("POST", f"/api/agent-tools/{tool['id']}/execute", json=body)
        assert result["success"] is False and result["data"] is None
        assert result["metadata"]["needsApproval"] is True and "durationMs" in result["metadata"]
        assert "needs approval" in result["error"] and "nothing was done" in result["error"]
    assert len(addon.CALLS) == before  # the tool's code never ran
    result = admin.ok("POST", f"/api/agent-tools/{tool['id']}/execute",
                      json={"input": {"text": "ping"}, "approved": True})
    assert result["success"] is True and result["data"]["approved"] is True
    assert "needsApproval" not in result["metadata"]


def test_document_delete_from_the_debug_runner_needs_approval(
    app: LiveApp, admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    """The report's case: trying out the document tool's delete deleted a document unasked."""
    tool = make_tool("docs", type="document")
    assert tool["needsApproval"] is False  # the type asks for approval per action (delete), not per tool
    doc = admin.ok("POST", "/api/agent-documents", json={"title": "Keep me", "content": "x"})
    delete = {"action": "delete", "id": doc["id"]}
    refused = admin.ok("POST", f"/api/agent-tools/{tool['id']}/execute", json={"input": delete})
    assert refused["success"] is False and refused["metadata"]["needsApproval"] is True
    assert admin.ok("GET", f"/api/agent-documents/{doc['id']}")["title"] == "Keep me"
    assert app.sql("SELECT count(*) FROM agent_documents WHERE id = ?", (doc["id"],)) == [(1,)]
    # Actions that need no approval run at once.
    read = admin.ok("POST", f"/api/agent-tools/{tool['id']}/execute", json={"input": {"action": "list"}})
    assert read["success"] is True and [d["id"] for d in read["data"]["items"]] == [doc["id"]]
    done = admin.ok("POST", f"/api/agent-tools/{tool['id']}/execute", json={"input": delete, "approved": True})
    assert done["success"] is True and done["data"] == {"id": doc["id"], "deleted": True}
    assert admin.get(f"/api/agent-documents/{doc['id']}").status_code == 404


def test_approved_must_be_a_boolean(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    tool = make_tool("echo", needsApproval=True)
    for value in ("yes", 1, None):
        r = admin.post(f"/api/agent-tools/{tool['id']}/execute", json={"input": {"text": "x"}, "approved": value})
        assert r.status_code == 422 and "approved" in r.json()["error"]["fields"]


def test_execute_unknown_tool_is_404_and_bad_body_is_422(admin: ApiClient) -> None:
    r = admin.post("/api/agent-tools/at_missing/execute", json={"input": {}})
    assert r.status_code == 404 and r.json()["error"]["code"] == "tool_not_found"
    r = admin.post("/api/agent-tools/at_missing/execute", json={"input": "1+1"})
    assert r.status_code == 422 and "input" in r.json()["error"]["fields"]
