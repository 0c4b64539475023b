"""Secret config fields: stored encrypted, never returned, kept or replaced on edit as documented."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.support import ApiClient, LiveApp

KEY = "sk-live-0123456789abcdef"


def _raw_row(app: LiveApp, tool_id: str) -> str:
    return " ".join(str(v) for v in app.sql("SELECT * FROM agent_tools WHERE id = ?", (tool_id,))[0])


def _run(admin: ApiClient, tool_id: str) -> dict[str, Any]:
    return admin.ok("POST", f"/api/agent-tools/{tool_id}/execute", json={"input": {"text": "hi"}})


def test_secret_is_encrypted_and_never_returned(
    app: LiveApp, admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    tool = make_tool("echo", config={"apiKey": KEY})
    assert "apiKey" not in tool["config"] and tool["secretsSet"] == ["apiKey"]
    for body in (admin.ok("GET", f"/api/agent-tools/{tool['id']}"), admin.ok("GET", "/api/agent-tools")):
        assert KEY not in str(body)
    raw = _raw_row(app, tool["id"])
    assert KEY not in raw and "apiKey" in raw  # the name is visible, the value is not
    # the tool itself gets the decrypted value
    assert _run(admin, tool["id"])["data"]["apiKey"] == KEY


def test_omitted_or_placeholder_secret_keeps_stored_value(
    app: LiveApp, admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    tool = make_tool("echo", config={"apiKey": KEY})
    for config in ({"timeoutMs": 5}, {"timeoutMs": 6, "apiKey": "•••"}, {"timeoutMs": 7, "apiKey": None}):
        updated = admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"config": config})
        assert updated["secretsSet"] == ["apiKey"] and updated["config"]["timeoutMs"] == config["timeoutMs"]
        assert _run(admin, tool["id"])["data"]["apiKey"] == KEY
    admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"name": "Renamed"})
    assert _run(admin, tool["id"])["data"]["apiKey"] == KEY


def test_new_secret_replaces_and_empty_string_removes(
    app: LiveApp, admin: ApiClient, make_tool: Callable[..., Any]
) -> None:
    tool = make_tool("echo", config={"apiKey": KEY})
    before = _raw_row(app, tool["id"])
    admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"config": {"apiKey": "sk-new-secret-value"}})
    after = _raw_row(app, tool["id"])
    assert "sk-new-secret-value" not in after and after != before
    assert _run(admin, tool["id"])["data"]["apiKey"] == "sk-new-secret-value"

    cleared = admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"config": {"apiKey": ""}})
    assert cleared["secretsSet"] == []
    assert _run(admin, tool["id"])["data"]["apiKey"] == ""


def test_no_secret_given_means_none_set(make_tool: Callable[..., Any]) -> None:
    assert make_tool("echo")["secretsSet"] == []


def test_secrets_do_not_follow_a_type_change(admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    tool = make_tool("echo", config={"apiKey": KEY})
    moved = admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"type": "calculator", "config": {}})
    assert moved["type"] == "calculator" and moved["secretsSet"] == []
    back = admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"type": "test-echo", "config": {}})
    assert back["secretsSet"] == [] and _run(admin, tool["id"])["data"]["apiKey"] == ""


def test_types_listing_names_secret_fields(admin: ApiClient, echo_type: str) -> None:
    types = {t["slug"]: t for t in admin.ok("GET", "/api/agent-tools/types?pageSize=100")["items"]}
    assert types[echo_type]["secretFields"] == ["apiKey"]


def test_builtin_webhook_secrets(app: LiveApp, admin: ApiClient, make_tool: Callable[..., Any]) -> None:
    url = "https://hooks.example.com/services/T0/B0/tokenXYZ987"
    tool = make_tool("hook", type="webhook", config={"url": url, "secretHeaders": "Authorization: Bearer abc123"})
    assert tool["secretsSet"] == ["secretHeaders", "url"]
    assert "url" not in tool["config"] and "secretHeaders" not in tool["config"]
    raw = _raw_row(app, tool["id"])
    assert "tokenXYZ987" not in raw and "abc123" not in raw
    types = {t["slug"]: t for t in admin.ok("GET", "/api/agent-tools/types?pageSize=100")["items"]}
    assert sorted(types["webhook"]["secretFields"]) == ["secretHeaders", "url"]
    cleared = admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"config": {"secretHeaders": ""}})
    assert cleared["secretsSet"] == ["url"]
