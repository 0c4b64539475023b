"""Issue 14 point 4 in a real browser: the view follows a growing reply to its very end (code blocks and
tables included, which render late), stays put when the reader scrolls up, and offers a button back."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, text

pytestmark = pytest.mark.e2e

TABLE = "| a | b |\n|---|---|\n" + "".join(f"| {i} | {i * i} |\n" for i in range(12))
CODE = "```python\n" + "".join(f"print({i})\n" for i in range(25)) + "```\n"
LONG = "\n\n".join(f"Paragraph {i} " + "words " * 30 for i in range(12)) + "\n\n" + CODE + "\n" + TABLE + "\nThe end."


# A function, not an expression: Playwright evaluates expressions with eval, which the page's content
# security policy forbids.
AT_END = ("() => { const s = document.getElementById('chat-scroll');"
          " return s.scrollHeight - s.scrollTop - s.clientHeight <= 2; }")
# The view's scrollTop once the reader's scroll has ended: the first `scrollend` while the page shows the
# way back (it shows once the reader moved away, and from then on only the reader moves the view; an
# earlier `scrollend` is the view following the reply).
READER_SCROLL_ENDS = """() => {
  const s = document.getElementById('chat-scroll');
  const back = document.getElementById('to-bottom');
  window.readerScrollEnd = new Promise((resolve) => {
    s.addEventListener('scrollend', function ended() {
      if (back.hidden) return;
      s.removeEventListener('scrollend', ended);
      resolve(s.scrollTop);
    });
  });
}"""


def gap(page: Page) -> float:
    """Pixels between the bottom of the view and the end of the conversation."""
    return page.evaluate("(() => { const s = document.getElementById('chat-scroll');"
                         " return s.scrollHeight - s.scrollTop - s.clientHeight; })()")


def test_follow_to_the_end_and_leave_the_reader_alone(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    page.set_viewport_size({"width": 1000, "height": 700})
    page.goto("/chat")
    fake_model.push(text(LONG, chunks=60, delay=0.02))
    page.get_by_label("Message").fill("long please")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".message.assistant table")).to_be_visible(timeout=15_000)
    expect(page.get_by_role("button", name="Send")).to_be_visible()
    expect(page.locator(".message.assistant .md").first).to_contain_text("The end.")
    expect(page.locator(".message.assistant .md").first).to_have_attribute("aria-busy", "false")  # final HTML
    page.wait_for_function(AT_END)  # the view follows the height the final render gave the reply
    expect(page.get_by_role("button", name="Jump to the latest reply")).to_be_hidden()

    # The reader scrolls up while the next reply streams: the view stays where they put it.
    fake_model.push(text(LONG, chunks=60, delay=0.04))
    page.get_by_label("Message").fill("again")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".message.assistant").nth(1)).to_contain_text("Paragraph 1")
    page.mouse.move(500, 300)
    page.evaluate(READER_SCROLL_ENDS)
    page.mouse.wheel(0, -600)
    top = page.evaluate("() => window.readerScrollEnd")  # where the wheel left the view
    back = page.get_by_role("button", name="Jump to the latest reply")
    expect(back).to_be_visible()
    expect(page.locator(".message.assistant").nth(1)).to_contain_text("The end.", timeout=15_000)
    assert page.evaluate("document.getElementById('chat-scroll').scrollTop") == top
    assert gap(page) > 200
    back.click()
    page.wait_for_function(AT_END)
    expect(back).to_be_hidden()

    # A phone's keyboard opens: it shrinks the page (the viewport asks for that) rather than covering the
    # composer, and the view, shorter now, still shows the end of the conversation.
    expect(page.locator("meta[name=viewport]")).to_have_attribute(
        "content", re.compile(r"interactive-widget=resizes-content"))
    page.set_viewport_size({"width": 1000, "height": 420})
    page.wait_for_function(AT_END)
    expect(page.get_by_label("Message")).to_be_in_viewport()
    expect(back).to_be_hidden()
