"""Markdown rendering: markdown-it-py + nh3, over the helper and over HTTP."""

from __future__ import annotations

from agentloft.web.markdown import render
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
    assert "<table>" in html and "<td>1</td>" in html


def test_render_endpoint_needs_sign_in_and_renders(anon: ApiClient, user: ApiClient) -> None:
    r = anon.post("/api/render/markdown", json={"text": "*hi*"})
    assert r.status_code == 401
    assert user.ok("POST", "/api/render/markdown", json={"text": "*hi*"}) == {"html": "<p><em>hi</em></p>\n"}
    r = user.post("/api/render/markdown", json={})
    assert r.status_code == 422 and "text" in r.json()["error"]["fields"]
