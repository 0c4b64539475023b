"""The admin debug endpoint runs a stored tool through the shared wrapper and returns its ToolResult."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support import ApiClient


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


def test_execute_runs_as_the_admin_approved_even_when_disabled_or_admin_only(
    admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    me = admin.ok("GET", "/api/auth/me")
    tool = make_tool("echo", enabled=False, adminOnly=True, needsApproval=True)
    data = _execute(admin, tool["id"], {"text": "ping"})["data"]
    assert data == {"text": "ping", "apiKey": "", "userId": me["id"], "userRole": "admin",
                    "approved": True, "toolSlug": "echo"}


def test_execute_unknown_tool_is_404_and_bad_body_is_422(admin: ApiClient) -> None:
    r = admin.post("/api/agent-tools/at_missing/execute", json={"input": {}})
    assert r.status_code == 404 and r.json()["error"]["code"] == "tool_not_found"
    r = admin.post("/api/agent-tools/at_missing/execute", json={"input": "1+1"})
    assert r.status_code == 422 and "input" in r.json()["error"]["fields"]
