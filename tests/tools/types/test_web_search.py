from __future__ import annotations

from agentloft.tools.types.web_search import TOOL_TYPE as SEARCH
from tests.tools.types.conftest import LOCAL, Run
from tests.tools.types.local_server import LocalWeb


async def test_searches_the_searxng_json_api(run: Run, web: LocalWeb) -> None:
    config = {"baseUrl": web.url + "/", "maxResults": 3, "language": "de", "maxSnippetChars": 40}
    result = await run(SEARCH, {"query": "pydantic ai", "timeRange": "week"}, config, allow=LOCAL)
    assert result.success, result.error
    assert [r["title"] for r in result.data["results"]] == [f"Result {i} for pydantic ai" for i in (1, 2, 3)]
    first = result.data["results"][0]
    assert first["url"] == "https://example.test/1" and len(first["snippet"]) == 40 and first["engine"] == "fake"
    assert result.data["suggestions"] == ["pydantic ai more"]
    sent = web.requests[-1]
    assert sent["path"] == "/search"
    assert sent["query"] == {"q": "pydantic ai", "format": "json", "pageno": "1", "safesearch": "1",
                             "language": "de", "categories": "general", "time_range": "week"}


async def test_result_count_from_input(run: Run, web: LocalWeb) -> None:
    result = await run(SEARCH, {"query": "x", "maxResults": 7}, {"baseUrl": web.url}, allow=LOCAL)
    assert len(result.data["results"]) == 7


async def test_unconfigured_blocked_and_failing_instances(run: Run, web: LocalWeb) -> None:
    unconfigured = await run(SEARCH, {"query": "x"})
    assert not unconfigured.success and "an admin must set the SearXNG base URL" in unconfigured.error
    blocked = await run(SEARCH, {"query": "x"}, {"baseUrl": web.url})
    assert not blocked.success and blocked.error.startswith("blocked: 127.0.0.1 is a loopback address")
    assert web.requests == []
    not_json = await run(SEARCH, {"query": "x"}, {"baseUrl": web.url + "/page"}, allow=LOCAL)
    assert not not_json.success and not_json.error == "search failed: HTTP 404"


async def test_bad_inputs(run: Run, web: LocalWeb) -> None:
    empty = await run(SEARCH, {"query": ""}, {"baseUrl": web.url}, allow=LOCAL)
    assert not empty.success and "query: String should have at least 1 character" in empty.error
    bad_range = await run(SEARCH, {"query": "x", "timeRange": "decade"}, {"baseUrl": web.url}, allow=LOCAL)
    assert not bad_range.success and "timeRange: Input should be 'day', 'week', 'month' or 'year'" in bad_range.error
    assert web.requests == []
