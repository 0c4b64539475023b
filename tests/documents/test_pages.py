"""The documents pages over HTTP: sign-in redirect, tabs, search, paging, safe markdown, 404 for
someone else's document, versions listed."""

from __future__ import annotations

from tests.documents.conftest import create_doc
from tests.support import ApiClient


def test_pages_require_sign_in(anon: ApiClient) -> None:
    r = anon.get("/agent-documents", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"].startswith("/login?next=")
    r = anon.get("/agent-documents/ad_x_0000000000", follow_redirects=False)
    assert r.status_code == 303


def test_list_tabs_search_and_pages(user: ApiClient) -> None:
    create_doc(user, title="Remember the deploy key", type="memory", content="rotate monthly")
    for i in range(21):
        create_doc(user, title=f"Report {i:02d}", type="document", content="quarterly 季度报告")
    html = user.get("/agent-documents").text
    assert "Remember the deploy key" in html and "Report 00" not in html  # memory tab by default
    html = user.get("/agent-documents", params={"type": "document"}).text
    assert "Report 20" in html and "Report 01" in html and "Report 00" not in html  # newest 20 first
    assert html.index("Report 20") < html.index("Report 19") and 'rel="next"' in html
    html = user.get("/agent-documents", params={"type": "document", "page": 2}).text
    assert "Report 00" in html and "Report 01" not in html and 'rel="prev"' in html
    html = user.get("/agent-documents", params={"type": "document", "q": "季度"}).text
    assert "21 found" in html
    html = user.get("/agent-documents", params={"type": "memory", "q": "deploy"}).text
    assert "Remember the deploy key" in html and "1 found" in html
    html = user.get("/agent-documents", params={"type": "memory", "q": "nothing-like-this"}).text
    assert "Nothing matches this search." in html
    # A search says which tab it covered and offers the other one with the same words.
    assert "Search memory" in html and "Only memory was searched." in html
    assert 'href="/agent-documents?type=document&q=nothing-like-this"' in html
    html = user.get("/agent-documents", params={"type": "document", "q": "deploy"}).text
    assert "Only documents were searched." in html and "Search memory for the same words" in html
    assert 'data-testid="doc-other-tab"' not in user.get("/agent-documents").text


def test_detail_renders_markdown_safely(user: ApiClient) -> None:
    doc = create_doc(
        user, title="<b>T</b>", content="# Heading\n\n**bold** <script>alert(1)</script>\n\n[x](javascript:alert(1))"
    )
    html = user.get(f"/agent-documents/{doc['id']}").text
    assert "<h1>Heading</h1>" in html and "<strong>bold</strong>" in html
    assert "<script>alert(1)</script>" not in html and "href=\"javascript" not in html
    assert "&lt;b&gt;T&lt;/b&gt;" in html
    user.ok("PUT", f"/api/agent-documents/{doc['id']}", json={"content": "second"})
    html = user.get(f"/agent-documents/{doc['id']}").text
    assert 'data-version="1"' in html and "second" in html


def test_someone_elses_document_is_a_404_page(user: ApiClient, bob: ApiClient) -> None:
    doc = create_doc(user, title="Private")
    r = bob.get(f"/agent-documents/{doc['id']}")
    assert r.status_code == 404 and "you have no access to it" in r.text and "Private" not in r.text


def test_summary_box_only_for_a_summary_of_its_own(user: ApiClient) -> None:
    cut = create_doc(user, title="Cut", content="A long text " * 40)
    own = create_doc(user, title="Own", content="A long text " * 40, summary="The gist in one line")
    assert 'data-testid="doc-summary"' not in user.get(f"/agent-documents/{cut['id']}").text
    html = user.get(f"/agent-documents/{own['id']}").text
    assert 'data-testid="doc-summary"' in html and "The gist in one line" in html
