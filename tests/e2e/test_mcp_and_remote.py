"""Issue 15 in a real browser: an admin adds an MCP server on its page, reads a tool's description and
enables it, and a user's agent calls it (the tool card shows the result); an agent invokes a remote A2A
agent (an a2a-sdk agent in another process) and the side panel streams its reply."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.a2a.conftest import CALLER_PROMPT, caller_step
from tests.a2a.test_remote import PEER_TOKEN, Peer
from tests.e2e.conftest import add_fake_model, api
from tests.e2e.test_a2a_panel import send
from tests.fakes.openai_server import FakeModel, FakeModelServer, call, text
from tests.tools.mcp.conftest import TOKEN, HttpPeer, start_http_peer

pytestmark = pytest.mark.e2e


@pytest.fixture
def mcp_http() -> Iterator[HttpPeer]:
    peer = start_http_peer()
    yield peer
    peer.server.stop()


def setup_model(page: Page, server: FakeModelServer) -> None:
    add_fake_model(page, server)
    api(page, "PUT", "/api/admin/settings", {"allowedInternalHosts": ["127.0.0.1"]})


def test_admin_adds_an_mcp_server_and_a_user_agent_calls_its_tool(
    admin_page: Page, new_page: Callable[..., Page], mcp_http: HttpPeer, fake_model_server: FakeModelServer,
    fake_model: FakeModel,
) -> None:
    page = admin_page
    setup_model(page, fake_model_server)
    page.goto("/admin/mcp-servers")
    page.get_by_role("button", name="Add MCP server").click()
    dialog = page.locator("#server-dialog")
    dialog.get_by_label("Name").fill("Testing")
    dialog.get_by_label("Slug").fill("testing")
    dialog.get_by_label("URL").fill(mcp_http.url)
    dialog.get_by_label("Bearer secret").fill(TOKEN)
    dialog.get_by_role("button", name="Save").click()

    # saving refreshes the new server: its tools show with the server's own descriptions, disabled
    tools = page.locator("#mcp-tools-table")
    add_row = tools.locator("tr[data-tool=add]")
    expect(add_row).to_contain_text("Add two integers.")
    expect(add_row).to_contain_text("testing__add")
    enabled = add_row.get_by_label("Enabled: add")
    expect(enabled).not_to_be_checked()
    enabled.check()
    expect(enabled).to_be_checked()
    page.screenshot(path="/tmp/agentloft-mcp-admin.png")
    expect(page.locator("#servers-table tr[data-slug=testing]")).to_contain_text(mcp_http.url)

    [server] = api(page, "GET", "/api/admin/mcp-servers")["items"]
    tool_id = next(t["toolId"] for t in api(page, "GET", f"/api/admin/mcp-servers/{server['id']}/tools")["items"]
                   if t["name"] == "add")
    assert api(page, "GET", f"/api/agent-tools/{tool_id}")["enabled"] is True

    # MCP tools come from a refresh: "New tool" does not offer the type; an MCP tool keeps it when edited
    page.goto("/admin/agent-tools")
    page.get_by_role("button", name="New tool").click()
    tool_dialog = page.locator("#tool-dialog")
    type_select = tool_dialog.locator("select[name=type]")
    expect(type_select.locator("option[value=calculator]")).to_have_count(1)
    expect(type_select.locator("option[value=mcp]")).to_have_count(0)
    tool_dialog.get_by_role("button", name="Cancel").click()
    page.locator("#tools-table tr[data-slug=testing__add]").get_by_role("button", name="Edit").click()
    expect(type_select).to_have_value("mcp")
    tool_dialog.get_by_role("button", name="Cancel").click()
    agent = api(page, "POST", "/api/admin/agents", {"slug": "calc", "name": "Calc", "systemPrompt": "Use tools."})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tool_id}])
    api(page, "POST", "/api/admin/users", {"username": "alice", "password": "password123", "role": "user"})

    user = new_page()
    user.goto("/login")
    api(user, "POST", "/api/auth/login", {"username": "alice", "password": "password123"})
    fake_model.push(call("testing__add", {"a": 20, "b": 22}), text("The sum is 42."))
    user.goto("/chat?agent=calc")
    send(user, "what is 20 + 22?")
    card = user.locator(".tool-card[data-tool='testing__add']")
    expect(card.get_by_test_id("tool-state")).to_have_text("Done")
    card.locator("summary", has_text="Output").click()
    expect(card.get_by_test_id("tool-output")).to_contain_text('"result": 42')
    expect(user.locator(".message.assistant").last).to_contain_text("The sum is 42.")
    user.screenshot(path="/tmp/agentloft-mcp-chat.png")


def test_the_tool_card_shows_an_mcp_image(
    admin_page: Page, mcp_http: HttpPeer, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """An image an MCP tool returns shows in the tool card as an image (not as base64 in the output's
    JSON), while the reply streams and after a reload."""
    page = admin_page
    setup_model(page, fake_model_server)
    server = api(page, "POST", "/api/admin/mcp-servers",
                 {"slug": "testing", "name": "Testing", "transport": "http", "url": mcp_http.url, "secret": TOKEN})
    tools = {t["name"]: t for t in api(page, "POST", f"/api/admin/mcp-servers/{server['id']}/refresh")["items"]}
    api(page, "PUT", f"/api/agent-tools/{tools['picture']['toolId']}", {"enabled": True})
    agent = api(page, "POST", "/api/admin/agents", {"slug": "painter", "name": "Painter", "systemPrompt": "Draw."})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tools["picture"]["toolId"]}])

    fake_model.push(call("testing__picture", {}), text("Here is a red square."))
    page.goto("/chat?agent=painter")
    send(page, "draw a square")

    def check_card() -> None:
        card = page.locator(".tool-card[data-tool='testing__picture']")
        expect(card.get_by_test_id("tool-state")).to_have_text("Done")
        image = card.get_by_test_id("tool-image")
        expect(image).to_be_visible()
        expect(image).to_have_attribute("src", re.compile(r"^data:image/png;base64,"))
        assert image.evaluate("img => img.complete && img.naturalWidth") == 1, "the browser decoded the PNG"
        card.locator("summary", has_text="Output").click()
        expect(card.get_by_test_id("tool-output")).to_contain_text('"success": true')
        expect(card.get_by_test_id("tool-output")).not_to_contain_text("iVBOR")

    check_card()
    expect(page.locator(".message.assistant").last).to_contain_text("Here is a red square.")
    page.screenshot(path="/tmp/agentloft-mcp-image.png")
    page.reload()
    check_card()


@pytest.fixture
def peer() -> Iterator[Peer]:
    remote = Peer(streaming=True)
    yield remote
    remote.stop()


def test_an_agent_invokes_a_remote_agent_and_the_panel_streams_it(
    admin_page: Page, peer: Peer, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    setup_model(page, fake_model_server)
    caller = api(page, "POST", "/api/admin/agents", {"slug": "general", "name": "General",
                                                     "systemPrompt": CALLER_PROMPT})
    tool = api(page, "POST", "/api/agent-tools", {"slug": "ask-agent", "name": "Ask agent", "type": "agent-invoke"})
    api(page, "PUT", f"/api/admin/agents/{caller['id']}/tools", [{"toolId": tool["id"]}])

    # the remote agent is registered on the agent form
    page.goto("/admin/agents")
    page.get_by_role("button", name="New agent").click()
    form = page.locator("#agent-form")
    form.get_by_label("Name").fill("Echo")
    form.get_by_label("Slug").fill("echo")
    form.get_by_label("Kind").select_option("remote")
    expect(form.get_by_label("System prompt")).to_be_hidden()
    form.get_by_label("Agent card URL").fill(peer.card_url)
    form.get_by_label("Bearer token").fill(PEER_TOKEN)
    expect(form.get_by_label("Callable over A2A")).to_be_hidden()  # a remote agent is always callable
    form.get_by_role("button", name="Save").click()
    expect(page.locator("#agents-table tr[data-slug=echo]")).to_contain_text("Remote")
    expect(page.get_by_test_id("card-warning")).to_be_hidden()
    page.locator("#agents-table tr[data-slug=echo]").get_by_role("button", name="Edit").click()
    refresh_card = form.get_by_role("button", name="Fetch the card again")
    expect(refresh_card).to_be_visible()
    expect(form.get_by_label("Bearer token")).to_have_attribute("placeholder", "••• stored — leave empty to keep")
    refresh_card.click()
    expect(form.get_by_test_id("card-preview")).to_contain_text("Echo peer")
    expect(form.get_by_test_id("card-preview")).to_contain_text("JSONRPC")
    page.screenshot(path="/tmp/agentloft-remote-agent-form.png")
    form.get_by_role("button", name="Cancel").click()

    # a card at a private address, refused by the network guard: saved, and said so, then marked in the list
    page.get_by_role("button", name="New agent").click()
    form.get_by_label("Name").fill("Far")
    form.get_by_label("Slug").fill("far")
    form.get_by_label("Kind").select_option("remote")
    form.get_by_label("Agent card URL").fill("http://10.9.8.7/.well-known/agent-card.json")
    form.get_by_role("button", name="Save").click()
    warning = page.get_by_test_id("card-warning")
    expect(warning).to_contain_text("“Far” was saved, but its agent card could not be fetched")
    expect(warning).to_contain_text("10.9.8.7 is a private address")
    expect(page.locator("#agents-table tr[data-slug=far]")).to_contain_text("Card not fetched")
    expect(page.locator("#agents-table tr[data-slug=echo]")).not_to_contain_text("Card not fetched")

    fake_model.push(caller_step(call("ask-agent", {"agentSlug": "echo", "input": "the quick brown fox jumps"})),
                    caller_step(text("The echo agent has answered.")))
    page.goto("/chat?agent=general")
    send(page, "ask the echo agent")
    panel = page.locator("#chat-side-panel .a2a-panel")
    expect(panel).to_have_count(1)
    expect(panel.locator(".a2a-panel-name")).to_have_text("Echo")
    expect(panel).to_have_attribute("data-state", "done", timeout=20_000)
    expect(panel.locator(".a2a-panel-body")).to_contain_text("echo: the quick brown fox jumps")
    expect(page.locator(".message.assistant").last).to_contain_text("The echo agent has answered.")
    page.screenshot(path="/tmp/agentloft-remote-agent-panel.png")

    # the remote task asks for input: the panel asks the user, and the answer goes back to it
    panel.get_by_role("button", name="Close").click()
    fake_model.push(caller_step(call("ask-agent", {"agentSlug": "echo", "input": "input please"})))
    send(page, "ask it something it must ask back")
    asking = page.locator("#chat-side-panel .a2a-panel .a2a-input")
    expect(asking).to_contain_text("which oven?", timeout=20_000)
    expect(page.locator("#chat-side-panel .a2a-panel")).to_have_attribute("data-state", "approval")
    fake_model.push(caller_step(text("The oven is the big one.")))
    asking.get_by_label("Your answer to the called agent").fill("the big one")
    asking.get_by_role("button", name="Send answer").click()
    expect(asking).to_have_count(0)
    expect(page.locator("#chat-side-panel .a2a-panel .a2a-panel-body")).to_contain_text("echo: the big one",
                                                                                        timeout=20_000)
    expect(page.locator(".message.assistant").last).to_contain_text("The oven is the big one.", timeout=20_000)
