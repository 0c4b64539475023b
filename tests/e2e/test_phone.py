"""Issue 14 point 1 in a real browser at phone sizes: every page fits 360–430 px without sideways
scrolling, the top bar keeps language and sign-out on screen, the conversation list is a drawer, and
long unbroken text (tool JSON) stays inside its bubble."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, call, text
from tests.support import LiveApp

pytestmark = pytest.mark.e2e

PHONES = [{"width": 360, "height": 740}, {"width": 390, "height": 844}, {"width": 430, "height": 932}]
LONG = "x" * 400
LONG_DESCRIPTION = ("Lets agents keep notes across conversations and write documents, and reads them back "
                    "when a later question needs what an earlier one found out.")


def overflow(page: Page) -> int:
    """How many pixels the page is wider than the screen (0 when nothing scrolls sideways)."""
    return page.evaluate("document.documentElement.scrollWidth - window.innerWidth")


def test_every_page_fits_a_phone(
    admin_page: Page, new_page: Callable[..., Page], app: LiveApp, fake_model_server: FakeModelServer,
    fake_model: FakeModel,
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server, "Fake model with a long name")
    api(page, "POST", "/api/admin/models", {"name": "Ollama", "provider": "openai", "model": "llama3.1:8b-instruct",
                                            "baseUrl": "http://127.0.0.1:11434/v1"})
    agent = api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper", "a2aCallable": True})
    tool = api(page, "POST", "/api/agent-tools", {"slug": "notes", "name": "Notes", "type": "document"})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tool["id"]}])
    fake_model.push(call("notes", {"action": "create", "title": LONG[:100], "content": LONG}),
                    text(f"Done: {LONG}\n\n```\n{LONG}\n```\n\n| a | b |\n|---|---|\n| {LONG} | 1 |"))
    page.goto("/chat")
    page.get_by_label("Message").fill(LONG)
    page.get_by_role("button", name="Send").click()
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=15_000)
    session = page.url.rsplit("/", 1)[1]
    doc = api(page, "GET", "/api/agent-documents?type=memory")["items"][0]["id"]
    pages = ["/chat", f"/chat/{session}", "/agent-documents", f"/agent-documents/{doc}", "/tokens", "/setup",
             "/approvals", "/admin/users", "/admin/models", "/admin/agents", "/admin/settings", "/admin/agent-tools",
             "/admin/mcp-servers", "/admin/audit", "/no-such-page"]

    stranger = new_page(viewport=PHONES[0])
    page.set_viewport_size(PHONES[0])
    too_wide = []
    for who, path in [(page, p) for p in pages] + [(stranger, "/login"), (stranger, "/signup")]:
        who.goto(path)
        who.wait_for_load_state("networkidle")
        for size in PHONES:  # one load per page; the layout follows the width as a phone turns
            who.set_viewport_size(size)
            if overflow(who) > 0:
                too_wide.append((size["width"], path, overflow(who)))
    assert not too_wide

    # At 360 px the language and the user menu (with the navigation and sign-out) are on screen.
    page.set_viewport_size(PHONES[0])
    # A tool's name and slug stand one under the other beside the label, not spread across the cell.
    page.goto("/admin/agent-tools")
    cell = page.locator("tr[data-slug='notes'] td").first
    name, slug = (cell.locator(part).bounding_box() for part in ("strong", "code"))
    assert name and slug and slug["y"] >= name["y"] + name["height"] - 1, (name, slug)
    page.goto("/admin/models")
    page.wait_for_load_state("networkidle")
    for testid in ("lang-menu", "user-menu"):
        box = page.get_by_test_id(testid).bounding_box()
        assert box and box["x"] >= 0 and box["x"] + box["width"] <= 360, (testid, box)
    page.get_by_test_id("user-menu").click()
    expect(page.get_by_role("button", name="Sign out")).to_be_in_viewport()
    expect(page.locator(".menu-list").get_by_role("link", name="Documents")).to_be_visible()
    row = page.locator("#models-table tbody tr").first  # a table row is a card with labelled cells
    expect(row.locator("td").first).to_have_attribute("data-label", "Name")
    assert broken_words(page, "#models-table") == []  # the base URL has room: it does not break at its port
    page.screenshot(path="/tmp/shots/phone-admin-models.png")

    # The conversation list is a drawer: ☰ opens it, Escape closes it and focus comes back.
    page.goto(f"/chat/{session}")
    sidebar = page.locator("#chat-sidebar")
    expect(sidebar).not_to_be_in_viewport()
    bubble = page.locator(".message.assistant .bubble").first
    expect(bubble.locator(".tool-card")).to_be_visible()
    width = bubble.evaluate("b => [b.scrollWidth, b.clientWidth]")
    assert width[0] <= width[1] + 1, width  # the tool's long JSON wraps inside
    page.screenshot(path="/tmp/shots/phone-chat.png")
    toggle = page.get_by_role("button", name="Show the chat list")
    toggle.click()
    expect(sidebar).to_be_in_viewport()
    expect(page.get_by_label("Search chats")).to_be_focused()
    expect(page.get_by_role("button", name="New chat")).to_be_visible()
    inside = 0
    for _ in range(12):  # Tab goes through the drawer (then to the browser), never to the chat behind it
        page.keyboard.press("Tab")
        where = page.evaluate("document.getElementById('chat-sidebar').contains(document.activeElement)"
                              " ? 'drawer' : document.activeElement.tagName")
        assert where in ("drawer", "BODY"), where
        inside += where == "drawer"
    assert inside >= 4
    page.screenshot(path="/tmp/shots/phone-drawer.png")
    page.evaluate("document.activeElement.blur()")  # where Tab out of the drawer and back leaves focus
    page.keyboard.press("Escape")
    expect(sidebar).not_to_be_in_viewport()
    expect(toggle).to_be_focused()
    toggle.click()
    page.locator("#session-list a").first.click()
    expect(page).to_have_url(f"{app.url}/chat/{session}")
    expect(sidebar).not_to_be_in_viewport()

    # On a touch screen, with nothing to hover, a message's actions and a sent message's time show.
    touch = new_page(viewport=PHONES[1], has_touch=True, is_mobile=True)
    touch.context.add_cookies(page.context.cookies())
    touch.goto(f"/chat/{session}")
    sent = touch.locator(".message.user").first
    for part in (sent.get_by_test_id("message-meta"), sent.locator(".msg-actions")):
        expect(part).to_have_css("opacity", "1")

    # Every control a finger presses is at least 40 px each way (a link inside text is read, not aimed at).
    expect(touch.locator(".code-head button.copy-code").first).to_be_visible()
    touch.get_by_test_id("user-menu").click()
    expect(touch.get_by_role("button", name="Sign out")).to_be_visible()
    assert small_targets(touch) == []
    touch.screenshot(path="/tmp/shots/phone-touch-chat.png")
    touch.keyboard.press("Escape")
    touch.get_by_role("button", name="Show the chat list").tap()
    expect(touch.locator("#chat-sidebar")).to_be_in_viewport(ratio=1)  # slid in whole: every control measured
    assert small_targets(touch) == []


BROKEN_WORDS = """(selector) => {
  const broken = [];
  for (const root of document.querySelectorAll(selector)) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].filter((r) => r.width > 0).map((r) => Math.round(r.top)));
        if (lines.size > 1) broken.push(m[0]);
      }
    }
  }
  return broken;
}"""


def broken_words(page: Page, selector: str) -> list[str]:
    """The words inside ``selector`` that a line break cuts in two ("PERMISSIO/N"): a word wraps whole."""
    return page.evaluate(BROKEN_WORDS, selector)


def test_tables_keep_their_words_whole_on_a_desktop(admin_page: Page, fake_model_server: FakeModelServer) -> None:
    page = admin_page
    page.set_viewport_size({"width": 1440, "height": 900})
    add_fake_model(page, fake_model_server)
    api(page, "POST", "/api/admin/mcp-servers", {"slug": "files", "name": "Files", "transport": "http",
                                                  "url": "http://127.0.0.1:9/mcp"})
    for number in range(3):
        api(page, "POST", "/api/agent-tools", {"slug": f"notes-{number}", "name": f"Team notes {number}",
                                               "type": "document", "description": LONG_DESCRIPTION})
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper", "description": LONG_DESCRIPTION})
    for path in ("/admin/agent-tools", "/admin/mcp-servers", "/admin/models", "/admin/agents", "/admin/users"):
        page.goto(path)
        page.wait_for_load_state("networkidle")
        expect(page.locator(".table tbody tr").first).to_be_visible()
        page.screenshot(path=f"/tmp/shots/desktop{path.replace('/', '-')}.png", full_page=True)
        assert broken_words(page, ".table") == [], path


def small_targets(page: Page) -> list[str]:
    """The visible controls smaller than 40 px across or high, named and measured. A checkbox or radio inside
    its label is measured by the label: a tap anywhere on the label sets it, so the label is the target."""
    return page.evaluate("""() => [...document.querySelectorAll('button, a, select, summary, input, textarea')]
      .filter((e) => !e.closest('p, li.message, td') || e.tagName !== 'A')
      .map((e) => (e.matches('input[type=checkbox], input[type=radio]') && e.closest('label')) || e)
      .filter((e) => { const r = e.getBoundingClientRect();
        return r.width && r.height && r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth
          && getComputedStyle(e).visibility !== 'hidden' && (r.width < 40 || r.height < 40); })
      .map((e) => `${e.tagName} ${e.className} "${e.textContent.trim().slice(0, 20)}" `
        + `${Math.round(e.getBoundingClientRect().width)}x${Math.round(e.getBoundingClientRect().height)}`)""")
