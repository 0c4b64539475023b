"""The public A2A server without a model: cards, authentication, which agents are served."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from a2a.client import A2AClientError

from tests.a2a import a2a_client as ac
from tests.chat.helpers import wait_for
from tests.support import ApiClient, LiveApp, start_app

RPC_GET_TASK = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}


def test_card_describes_agent(app: LiveApp, make_agent: Callable[..., dict[str, Any]]) -> None:
    make_agent("coder", "x", name="Coder", description="Writes code.", a2aCallable=True)
    card = ac.run(ac.card(app.url, "coder"))
    assert card.name == "Coder" and card.description == "Writes code."
    assert card.capabilities.streaming is True
    assert [s.id for s in card.skills] == ["coder"]
    iface = card.supported_interfaces[0]
    assert iface.protocol_binding == "JSONRPC" and iface.protocol_version == "1.0"
    assert iface.url == f"{app.url}/a2a/coder/"
    assert card.security_schemes["bearer"].http_auth_security_scheme.scheme == "bearer"
    assert "bearer" in card.security_requirements[0].schemes


def test_card_urls_never_come_from_the_host_header(
    app: LiveApp, anon: ApiClient, make_agent: Callable[..., dict[str, Any]]
) -> None:
    """Unset AGENTLOFT_PUBLIC_URL: the address the request reached the server at, whatever Host says (a
    card cached under a forged Host would send other callers and their tokens elsewhere)."""
    make_agent("coder", "x", a2aCallable=True)
    card = anon.get("/a2a/coder/.well-known/agent-card.json", headers={"Host": "evil.example"}).json()
    assert [i["url"] for i in card["supportedInterfaces"]] == [f"{app.url}/a2a/coder/", f"{app.url}/a2a/coder/rest"]


def test_card_urls_come_from_the_public_url(tmp_path: Path, template_db: Path) -> None:
    live = start_app(tmp_path / "data", template_db, public_url="https://agents.example.com/team/")
    try:
        with live.client() as admin:
            admin.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
            admin.ok("POST", "/api/admin/agents", json={"slug": "coder", "name": "Coder", "systemPrompt": "x",
                                                        "a2aCallable": True})
        card = ac.run(ac.card(live.url, "coder"))
        assert [i.url for i in card.supported_interfaces] == ["https://agents.example.com/team/a2a/coder/",
                                                             "https://agents.example.com/team/a2a/coder/rest"]
    finally:
        live.stop()


def test_only_enabled_callable_agents_are_served(
    anon: ApiClient, admin: ApiClient, make_agent: Callable[..., dict[str, Any]], token: str
) -> None:
    private = make_agent("private", "x")  # not A2A-callable
    off = make_agent("off", "x", a2aCallable=True, enabled=False)
    for slug in ("private", "off", "missing"):
        assert anon.get(f"/a2a/{slug}/.well-known/agent-card.json").status_code == 404
        r = anon.post(f"/a2a/{slug}/", json=RPC_GET_TASK, headers={"Authorization": f"Bearer {token}",
                                                                   "A2A-Version": "1.0"})
        assert r.status_code == 404, r.text
    # Agents change at run time: enabling one serves it at once, without a restart.
    admin.ok("PUT", f"/api/admin/agents/{off['id']}", json={"enabled": True})
    admin.ok("PUT", f"/api/admin/agents/{private['id']}", json={"a2aCallable": True, "name": "Renamed"})
    assert anon.get("/a2a/off/.well-known/agent-card.json").status_code == 200
    assert anon.get("/a2a/private/.well-known/agent-card.json").json()["name"] == "Renamed"


def test_rpc_needs_a_valid_personal_token(
    app: LiveApp, anon: ApiClient, make_agent: Callable[..., dict[str, Any]], token: str
) -> None:
    make_agent("coder", "x", a2aCallable=True)
    headers = {"A2A-Version": "1.0"}
    assert anon.post("/a2a/coder/", json=RPC_GET_TASK, headers=headers).status_code == 401
    bad = anon.post("/a2a/coder/", json=RPC_GET_TASK, headers={**headers, "Authorization": "Bearer alt_wrong"})
    assert bad.status_code == 401 and bad.json()["error"]["code"] == "invalid_token"
    ok = anon.post("/a2a/coder/", json=RPC_GET_TASK, headers={**headers, "Authorization": f"Bearer {token}"})
    assert ok.status_code == 200 and ok.json()["error"]["code"] == -32001  # task not found, JSON-RPC style
    with pytest.raises(A2AClientError):
        ac.run(ac.stream(app.url, "coder", "alt_wrong", "hello"))


def test_panel_stream_requires_task_and_owner(app: LiveApp, user: ApiClient, anon: ApiClient) -> None:
    r = user.get("/api/agents/a2a/stream")
    assert r.status_code == 400 and r.json()["error"]["code"] == "task_id_required"
    assert user.get("/api/agents/a2a/stream?taskId=unknown").status_code == 404
    assert anon.get("/api/agents/a2a/stream?taskId=unknown").status_code == 401


def test_restart_fails_tasks_left_running(tmp_path: Path, template_db: Path) -> None:
    """A task's run lives in its process; after a restart a 'working' task can never end, so it fails."""
    data = tmp_path / "data"
    first = start_app(data, template_db)
    with first.client() as c:
        c.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
    first.sql(
        "INSERT INTO a2a_task_sessions (id, user_id, state, task_data, created_at, "
        "updated_at) VALUES ('t-run', 1, 'working', ?, '2026-01-01', '2026-01-01'), "
        "('t-done', 1, 'completed', NULL, '2026-01-01', '2026-01-01')",
        (json.dumps({"id": "t-run", "status": {"state": "TASK_STATE_WORKING"}}),),
    )
    first.stop()
    second = start_app(data)
    try:
        def rows() -> dict[str, tuple[str, Any]]:
            return {r[0]: (r[1], r[2]) for r in second.sql("SELECT id, state, task_data FROM a2a_task_sessions")}

        # with several workers about, the sweep at start looks twice, a heartbeat apart, in the background
        wait_for(lambda: rows()["t-run"][0] == "failed")
        assert rows()["t-done"][0] == "completed"
        assert json.loads(rows()["t-run"][1])["status"]["state"] == "TASK_STATE_FAILED"
    finally:
        second.stop()
