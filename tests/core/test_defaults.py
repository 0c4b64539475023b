"""A fresh install starts with one tool per type and the Assistant; deleted defaults stay deleted."""

from __future__ import annotations

import importlib
import logging
from pathlib import Path

import pytest

from agentloft.defaults import ASSISTANT
from tests.support import LiveApp, signup, start_app

PROMPT_MIGRATION = importlib.import_module("agentloft.migrations.versions.0006_default_prompt")

EXPECTED_DISABLED = {"web-search", "http-api", "webhook", "sql-query", "python", "knowledge"}


def _start(tmp_path: Path, template_db: Path) -> LiveApp:
    return start_app(tmp_path / "data", template_db, create_defaults=True)


def test_fresh_database_has_defaults(tmp_path: Path, template_db: Path) -> None:
    live = _start(tmp_path, template_db)
    try:
        with live.client() as admin:
            signup(admin, "root")
            types = {t["slug"] for t in admin.ok("GET", "/api/agent-tools/types")["items"]}
            tools = admin.ok("GET", "/api/agent-tools", params={"pageSize": 100})["items"]
            by_type = {t["type"]: t for t in tools}
            # one instance of every built-in type; MCP tools come from refreshing a server, never by default
            assert set(by_type) == types - {"mcp"}
            assert len(types) == 17
            for slug, tool in by_type.items():
                assert tool["enabled"] is (slug not in EXPECTED_DISABLED), slug
                assert tool["name"] and tool["description"], slug
            assert by_type["python"]["adminOnly"] is True and by_type["python"]["needsApproval"] is True
            agents = admin.ok("GET", "/api/admin/agents")["items"]
            assert [a["slug"] for a in agents] == ["assistant"]
            assistant = agents[0]
            assert assistant["name"] == "Assistant" and assistant["modelId"] is None  # the default model
            links = admin.ok("GET", f"/api/admin/agents/{assistant['id']}/tools")["items"]
            linked = {next(t["type"] for t in tools if t["id"] == link["toolId"]) for link in links}
            assert linked == {"calculator", "datetime", "document", "fetch"}
    finally:
        live.stop()


def test_a_fresh_start_warns_of_nothing(tmp_path: Path, template_db: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The first thing a new install printed was "default tool mcp not created: config.serverId: Field
    required": MCP tools are made by refreshing a server, so no default of that type is attempted."""
    caplog.set_level(logging.WARNING, logger="agentloft")
    _start(tmp_path, template_db).stop()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("agentloft.defaults")] == []


def test_deleted_defaults_do_not_come_back(tmp_path: Path, template_db: Path) -> None:
    live = _start(tmp_path, template_db)
    try:
        with live.client() as admin:
            signup(admin, "root")
            tools = admin.ok("GET", "/api/agent-tools", params={"pageSize": 100})["items"]
            calc = next(t for t in tools if t["type"] == "calculator")
            admin.ok("DELETE", f"/api/agent-tools/{calc['id']}", status=204)
            assistant = admin.ok("GET", "/api/admin/agents")["items"][0]
            admin.ok("DELETE", f"/api/admin/agents/{assistant['id']}", status=204)
    finally:
        live.stop()
    live = start_app(tmp_path / "data", None, create_defaults=True)
    try:
        assert live.sql("SELECT count(*) FROM agent_tools WHERE type = 'calculator'")[0][0] == 0
        assert live.sql("SELECT count(*) FROM agents")[0][0] == 0
        assert live.sql("SELECT count(*) FROM agent_tools")[0][0] == 15
    finally:
        live.stop()


def test_defaults_can_be_switched_off(app: LiveApp) -> None:
    assert app.sql("SELECT count(*) FROM agent_tools")[0][0] == 0
    assert app.sql("SELECT count(*) FROM agents")[0][0] == 0


def test_the_default_prompt_names_no_tool(tmp_path: Path, template_db: Path) -> None:
    """With every default tool made admin-only, the Assistant's prompt still says nothing about any of them
    (the earlier prompt named four); migration 0006 carries the same text to existing installs."""
    assert ASSISTANT.system_prompt == PROMPT_MIGRATION.NEW_PROMPT
    live = _start(tmp_path, template_db)
    try:
        with live.client() as admin:
            signup(admin, "root")
            for tool in admin.ok("GET", "/api/agent-tools", params={"pageSize": 100})["items"]:
                admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"adminOnly": True})
            assistant = admin.ok("GET", "/api/admin/agents")["items"][0]
            check = {"systemPrompt": assistant["systemPrompt"]}
            assert admin.ok("POST", "/api/admin/agents/prompt-check", json=check) == {"warnings": []}
            old = admin.ok("POST", "/api/admin/agents/prompt-check", json={"systemPrompt": PROMPT_MIGRATION.OLD_PROMPT})
            assert sorted(w.split("(")[1].split(")")[0] for w in old["warnings"]) == [
                "calculator", "datetime", "document", "fetch"]
    finally:
        live.stop()
