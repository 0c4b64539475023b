"""Markdown rendering: markdown-it-py + nh3, over the helper and over HTTP."""

from __future__ import annotations

from agentloft.web.markdown import render, sanitize
from tests.support import ApiClient


def test_render_keeps_markdown_and_drops_scripts() -> None:
    html = render("# Title\n\n**bold** `x` <script>alert(1)</script> <img src=x onerror=alert(1)>")
    assert "<h1>Title</h1>" in html and "<strong>bold</strong>" in html and "<code>x</code>" in html
    assert "<script" not in html and "<img" not in html  # raw HTML stays visible text, never a tag
    assert "&lt;script&gt;" in html


def test_render_refuses_javascript_links_and_keeps_tables() -> None:
    html = render("[a](javascript:alert(1)) [b](https://example.com)\n\n| x | y |\n|---|---|\n| 1 | 2 |")
    assert 'href="javascript' not in html
    assert 'href="https://example.com"' in html and 'rel="noopener noreferrer nofollow"' in html
    assert 'target="_blank"' in html  # a link opens beside the chat, not over it
    assert "<table>" in html and "<td>1</td>" in html


def test_render_endpoint_needs_sign_in_and_renders(anon: ApiClient, user: ApiClient) -> None:
    r = anon.post("/api/render/markdown", json={"text": "*hi*"})
    assert r.status_code == 401
    assert user.ok("POST", "/api/render/markdown", json={"text": "*hi*"}) == {"html": "<p><em>hi</em></p>\n"}
    r = user.post("/api/render/markdown", json={})
    assert r.status_code == 422 and "text" in r.json()["error"]["fields"]


def test_code_blocks_are_highlighted_with_their_language_and_nothing_else_gets_classes() -> None:
    html = render("```python\ndef f(x):\n    return x < 1\n```\n\n```nosuchlang\n<b>x</b>\n```")
    assert '<code class="language-python"><span class="k">def</span>' in html
    assert '<span class="nf">f</span>' in html and "&lt;" in html
    assert '<code class="language-nosuchlang">&lt;b&gt;x&lt;/b&gt;' in html  # unknown: escaped, not guessed
    # Only Pygments' token classes pass on spans: a class smuggled into markdown never reaches the page.
    cleaned = sanitize('<span class="evil k">x</span><div class="k">y</div>')
    assert cleaned == '<span class="k">x</span><div class="">y</div>'


def test_math_becomes_mathml_and_money_stays_text() -> None:
    html = render(r"The area is $$\int_0^1 x\,dx$$ and $a^2$; it costs $5 and $10.")
    assert html.startswith("<p>The area is <span class=\"math display\"><math")
    assert "<mo>∫</mo>" in html and "<msup><mi>a</mi><mn>2</mn></msup>" in html
    assert "it costs $5 and $10.</p>" in html
    block = render("$$\n\\frac{1}{2}\n$$")
    assert '<div class="math block">' in block and "<mfrac>" in block
    broken = render(r"see $\frac{1}{$ here")
    assert "math-error" in broken or "$" in broken  # unreadable LaTeX shows its source, never an error
    assert "<script" not in render(r"$\text{<script>alert(1)</script>}$")


def test_plain_text_of_markdown_for_titles_and_summaries() -> None:
    from agentloft.core.plaintext import markdown_to_plain

    assert markdown_to_plain("# **Plan** for `x`:\n\n- one\n- [two](https://a.example)") == "Plan for x: one two"
    assert markdown_to_plain("> quote *it*") == "quote it"
    assert markdown_to_plain("") == ""


def test_the_plain_text_shortcut_never_changes_a_result() -> None:
    """Text without markdown skips the parser (titles are made as every turn starts); it must read the
    same as parsed."""
    from agentloft.core.plaintext import markdown_to_plain, parsed_plain

    for text in ["How do I read a CSV file in Python?", "- one\n- two", "1. first\n2. second", "a  b\n\nc",
                 "Price is 5.00 dollars.", "x\n---\ny", "Title\n===", "    code block", "a\tb", "100% sure",
                 "plain, text: with (parens) and dots... ok?", "e-mail me at a@b.c", "2) item", "+ plus",
                 "word-with-dash - and dash", "咖啡怎么做？", "Line one\nline two", "A = b + c", "x & y"]:
        assert markdown_to_plain(text) == parsed_plain(text), text


def test_batch_endpoint_renders_in_order_and_checks_its_size(user: ApiClient) -> None:
    body = user.ok("POST", "/api/render/markdown/batch", json={"texts": ["*a*", "**b**", ""]})
    assert body == {"html": ["<p><em>a</em></p>\n", "<p><strong>b</strong></p>\n", ""]}
    r = user.post("/api/render/markdown/batch", json={"texts": ["x"] * 51})
    assert r.status_code == 422 and "texts" in r.json()["error"]["fields"]
    big = "x" * 600_000
    r = user.post("/api/render/markdown/batch", json={"texts": [big, big]})
    assert r.status_code == 422
