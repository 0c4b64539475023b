"""Issue 3 point 8 in a real browser: create a tool through the dialog (config form from the type's
schema), toggle its permission in the table, run it in the debug panel, give it to an agent with an
approval override."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import api
from tests.support import LiveApp

pytestmark = pytest.mark.e2e


def test_create_tool_toggle_permission_and_debug(admin_page: Page, app: LiveApp) -> None:
    page = admin_page
    page.goto("/admin/agent-tools")
    page.get_by_role("button", name="New tool").click()
    dialog = page.locator("#tool-dialog")
    dialog.get_by_label("Type").select_option("calculator")
    # The config form comes from the calculator's JSON Schema, prefilled with its default.
    expect(dialog.get_by_label("Precision")).to_have_value("12")
    dialog.get_by_label("Name").fill("Calc")
    dialog.get_by_label("Slug").fill("calc")
    dialog.get_by_label("Precision").fill("6")
    dialog.get_by_label("Admin only (hidden from other users)").check()
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()

    row = page.locator("#tools-table tr[data-slug='calc']")
    toggle = row.get_by_test_id("permission")
    expect(toggle).to_have_text("Admin only")
    assert app.sql("SELECT admin_only, config FROM agent_tools WHERE slug='calc'") == [(1, '{"precision": 6}')]
    toggle.click()
    expect(toggle).to_have_text("Everyone")
    assert app.sql("SELECT admin_only FROM agent_tools WHERE slug='calc'") == [(0,)]
    toggle.click()
    expect(toggle).to_have_text("Admin only")
    assert app.sql("SELECT admin_only FROM agent_tools WHERE slug='calc'") == [(1,)]

    # A bad config value shows what the API found beside the field, worded by the page from its code
    # (so in the page's language), not in the validator's words.
    row.get_by_role("button", name="Edit").click()
    expect(dialog.get_by_label("Precision")).to_have_value("6")
    dialog.get_by_label("Precision").fill("99")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.locator("[data-config='precision'] .field-error")).to_have_text("must be 17 or less")
    page.screenshot(path="/tmp/agentloft-tool-dialog.png")
    dialog.get_by_role("button", name="Cancel").click()

    # The debug panel runs the tool on JSON input.
    row.get_by_role("button", name="Debug").click()
    debug = page.locator("#debug-dialog")
    debug.get_by_label("Input (JSON, as the model would send it)").fill(json.dumps({"expression": "2 * (3 + 4)"}))
    debug.get_by_role("button", name="Run").click()
    expect(debug.locator(".debug-status")).to_have_text("Success")
    expect(debug.get_by_test_id("debug-output")).to_contain_text("14")
    debug.get_by_label("Input (JSON, as the model would send it)").fill(json.dumps({"expression": ""}))
    debug.get_by_role("button", name="Run").click()
    expect(debug.locator(".debug-status")).to_have_text("Failed")
    debug.get_by_role("button", name="Close").click()
    page.screenshot(path="/tmp/agentloft-tools.png", full_page=True)


def test_tool_with_list_and_secret_fields(admin_page: Page, app: LiveApp) -> None:
    page = admin_page
    page.goto("/admin/agent-tools")
    page.get_by_role("button", name="New tool").click()
    dialog = page.locator("#tool-dialog")
    dialog.get_by_label("Type").select_option("webhook")
    dialog.get_by_label("Name").fill("Team room")
    dialog.get_by_label("Slug").fill("team-room")
    dialog.get_by_label("URL", exact=True).fill("https://hooks.example.com/T0KEN")
    dialog.get_by_label("Headers", exact=True).fill("X-Team: core")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    tool = next(t for t in api(page, "GET", "/api/agent-tools")["items"] if t["slug"] == "team-room")
    assert tool["config"]["headers"] == {"X-Team": "core"} and tool["secretsSet"] == ["url"]
    assert "T0KEN" not in json.dumps(tool)

    # Editing never shows the secret; saving without touching it keeps it.
    page.locator("#tools-table tr[data-slug='team-room']").get_by_role("button", name="Edit").click()
    url_input = dialog.get_by_label("URL", exact=True)
    expect(url_input).to_have_value("")
    expect(url_input).to_have_attribute("placeholder", "••• stored — leave empty to keep")
    dialog.get_by_label("Name").fill("Team room 2")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    tool = next(t for t in api(page, "GET", "/api/agent-tools")["items"] if t["slug"] == "team-room")
    assert tool["name"] == "Team room 2" and tool["secretsSet"] == ["url"]


def test_agent_tool_picker_with_approval_override(admin_page: Page) -> None:
    page = admin_page
    calc = api(page, "POST", "/api/agent-tools", {"slug": "calc", "name": "Calc", "type": "calculator"})
    api(page, "POST", "/api/agent-tools", {"slug": "clock", "name": "Clock", "type": "datetime"})
    page.goto("/admin/agents")
    page.get_by_role("button", name="New agent").click()
    dialog = page.locator("#agent-dialog")
    dialog.get_by_label("Name").fill("Math")
    dialog.get_by_label("Slug").fill("math")
    picker = dialog.locator(".tool-picker")
    expect(picker).to_be_visible()
    picker.locator("input[data-tool='calc']").check()
    picker.get_by_label("Approval for Calc").select_option(label="Always ask")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    agent = api(page, "GET", "/api/admin/agents")["items"][0]
    links = api(page, "GET", f"/api/admin/agents/{agent['id']}/tools")["items"]
    assert [(link["toolId"], link["needsApproval"]) for link in links] == [(calc["id"], True)]

    # Reopening shows the choice; switching back to inherit stores null.
    page.locator("#agents-table tr[data-slug='math']").get_by_role("button", name="Edit").click()
    expect(picker.locator("input[data-tool='calc']")).to_be_checked()
    expect(picker.locator("input[data-tool='clock']")).not_to_be_checked()
    expect(picker.get_by_label("Approval for Calc")).to_have_value("true")
    page.screenshot(path="/tmp/agentloft-agent-picker.png")
    picker.get_by_label("Approval for Calc").select_option("")
    picker.locator("input[data-tool='clock']").check()
    dialog.get_by_role("button", name="Save").click()
    expect(dialog).to_be_hidden()
    links = api(page, "GET", f"/api/admin/agents/{agent['id']}/tools")["items"]
    assert [(link["slug"], link["needsApproval"]) for link in links] == [("calc", None), ("clock", None)]


def test_agent_form_warns_when_the_prompt_names_an_admin_only_tool(admin_page: Page) -> None:
    page = admin_page
    api(page, "POST", "/api/agent-tools", {"slug": "secret-calc", "name": "Secret calc", "type": "calculator",
                                           "adminOnly": True})
    agent = api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper",
                                                    "systemPrompt": "Use secret-calc for sums."})
    assert agent["warnings"] and "'Secret calc' (secret-calc)" in agent["warnings"][0]
    page.goto("/admin/agents")
    dialog = page.locator("#agent-dialog")
    warnings = dialog.locator(".prompt-warnings")
    page.locator("#agents-table tr[data-slug='helper']").get_by_role("button", name="Edit").click()
    expect(warnings).to_be_visible()  # shown as soon as the editor opens
    expect(warnings).to_contain_text("names the admin-only tool 'Secret calc' (secret-calc)")
    dialog.get_by_label("System prompt").fill("Add numbers carefully.")
    expect(warnings).to_be_hidden()
    dialog.get_by_label("System prompt").fill("Ask the Secret Calc.")
    expect(warnings).to_be_visible()
    page.screenshot(path="/tmp/agentloft-agent-prompt-warning.png")
    dialog.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="New agent").click()
    expect(warnings).to_be_hidden()


def test_debug_panel_asks_before_a_call_that_needs_approval(admin_page: Page, app: LiveApp) -> None:
    """Issue 13 point 7: the document tool's delete, tried out in the debug panel, waits for a second,
    explicit step; cancelling or editing the input sends nothing approved."""
    page = admin_page
    tool = api(page, "POST", "/api/agent-tools", {"slug": "docs", "name": "Docs", "type": "document"})
    doc = api(page, "POST", "/api/agent-documents", {"title": "Keep me", "content": "x"})

    def stored() -> list[tuple[object, ...]]:
        return app.sql("SELECT id FROM agent_documents WHERE id = ?", (doc["id"],))

    page.goto("/admin/agent-tools")
    page.locator(f"#tools-table tr[data-slug='{tool['slug']}']").get_by_role("button", name="Debug").click()
    debug = page.locator("#debug-dialog")
    field = debug.get_by_label("Input (JSON, as the model would send it)")
    approval = debug.get_by_test_id("debug-approval")
    field.fill(json.dumps({"action": "delete", "id": doc["id"]}))

    debug.get_by_role("button", name="Run").click()
    expect(approval).to_be_visible()
    expect(approval).to_contain_text("needs approval")
    expect(debug.locator(".debug-result")).to_be_hidden()
    assert stored() == [(doc["id"],)]
    debug.get_by_role("button", name="Cancel").click()
    expect(approval).to_be_hidden()
    assert stored() == [(doc["id"],)]

    debug.get_by_role("button", name="Run").click()
    expect(approval).to_be_visible()
    field.fill(json.dumps({"action": "list"}))  # a different call: the confirmation is gone
    expect(approval).to_be_hidden()
    field.fill(json.dumps({"action": "delete", "id": doc["id"]}))
    debug.get_by_role("button", name="Run").click()
    expect(approval).to_be_visible()
    page.screenshot(path="/tmp/agentloft-debug-approval.png")
    assert stored() == [(doc["id"],)]

    debug.get_by_role("button", name="Approve and run").click()
    expect(approval).to_be_hidden()
    expect(debug.locator(".debug-status")).to_have_text("Success")
    expect(debug.get_by_test_id("debug-output")).to_contain_text('"deleted": true')
    assert stored() == []
