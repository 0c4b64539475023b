from __future__ import annotations

from agentloft.tools.types.rss import TOOL_TYPE as RSS
from tests.tools.types.conftest import LOCAL, Run
from tests.tools.types.local_server import LocalWeb


async def test_latest_rss_items_first(run: Run, web: LocalWeb) -> None:
    result = await run(RSS, {"url": f"{web.url}/feed.xml", "limit": 2}, allow=LOCAL)
    assert result.success, result.error
    assert result.data["feed"]["title"] == "Test feed"
    items = result.data["items"]
    assert [i["title"] for i in items] == ["New item", "Middle item"]
    assert items[0]["link"] == "http://example.test/3" and items[0]["published"] == "2024-01-03T10:00:00Z"


async def test_summaries_are_text_and_capped(run: Run, web: LocalWeb) -> None:
    result = await run(RSS, {"url": f"{web.url}/feed.xml"}, {"maxSummaryChars": 5}, allow=LOCAL)
    assert result.data["items"][-1]["summary"] == "Old s"
    full = await run(RSS, {"url": f"{web.url}/feed.xml"}, allow=LOCAL)
    assert full.data["items"][-1]["summary"] == "Old summary"


async def test_atom(run: Run, web: LocalWeb) -> None:
    result = await run(RSS, {"url": f"{web.url}/atom.xml"}, allow=LOCAL)
    assert result.data["feed"]["title"] == "Atom feed"
    assert result.data["items"] == [{"title": "Atom entry", "link": "http://example.test/a",
                                     "published": "2024-02-01T00:00:00Z", "author": None,
                                     "summary": "Atom summary"}]


async def test_limits_from_the_config(run: Run, web: LocalWeb) -> None:
    result = await run(RSS, {"url": f"{web.url}/feed.xml", "limit": 50}, {"maxItems": 1}, allow=LOCAL)
    assert len(result.data["items"]) == 1


async def test_failures(run: Run, web: LocalWeb) -> None:
    not_a_feed = await run(RSS, {"url": f"{web.url}/binary"}, allow=LOCAL)
    assert not not_a_feed.success and not_a_feed.error == f"{web.url}/binary is not an RSS or Atom feed"
    missing = await run(RSS, {"url": f"{web.url}/nope.xml"}, allow=LOCAL)
    assert not missing.success and missing.error == "the feed answered HTTP 404"
    blocked = await run(RSS, {"url": f"http://localhost:{web.port}/feed.xml"})
    assert blocked.error.startswith("blocked: localhost resolves to")
    other_domain = await run(RSS, {"url": f"{web.url}/feed.xml"}, {"allowedDomains": ["example.org"]}, allow=LOCAL)
    assert other_domain.error.startswith("blocked: 127.0.0.1 is not in the allowed domains")
    assert [r["path"] for r in web.requests] == ["/binary"]  # (404s are not recorded)


async def test_bad_inputs(run: Run) -> None:
    result = await run(RSS, {"url": "http://x.test/feed", "limit": 0})
    assert not result.success and "limit: Input should be greater than or equal to 1" in result.error
