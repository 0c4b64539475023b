from __future__ import annotations

from agentloft.tools.types.fetch import TOOL_TYPE as FETCH
from agentloft.tools.types.fetch import html_to_text
from tests.tools.types.conftest import LOCAL, Run
from tests.tools.types.local_server import LocalWeb


async def test_html_becomes_readable_text(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"{web.url}/page"}, allow=LOCAL)
    assert result.success, result.error
    data = result.data
    assert data["title"] == "Test page" and data["status"] == 200 and data["contentType"] == "text/html"
    text = data["content"]
    assert "Hello world" in text
    assert f"First paragraph with a link ({web.url}/next)." in text
    assert "- one\n- two" in text
    assert "  keep\n   spacing" in text
    assert "secret" not in text and "color:red" not in text and "<" not in text
    assert data["truncated"] is False


def test_html_to_text_without_links() -> None:
    title, text = html_to_text("<p>See <a href='http://x.test/'>this</a></p><script>x()</script>", keep_links=False)
    assert (title, text) == ("", "See this")


async def test_json_is_pretty_printed_and_raw_is_raw(run: Run, web: LocalWeb) -> None:
    pretty = await run(FETCH, {"url": f"{web.url}/data.json"}, allow=LOCAL)
    assert pretty.data["content"] == '{\n  "b": 2,\n  "a": [\n    1,\n    2\n  ]\n}'
    raw = await run(FETCH, {"url": f"{web.url}/page", "raw": True}, allow=LOCAL)
    assert raw.data["content"].startswith("<!doctype html>")


async def test_post_sends_the_body(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"{web.url}/echo", "method": "POST", "body": '{"q": 1}'}, allow=LOCAL)
    assert result.success, result.error
    assert web.requests[-1]["body"] == '{"q": 1}'
    assert web.requests[-1]["headers"]["content-type"] == "application/json"
    refused = await run(FETCH, {"url": f"{web.url}/echo", "method": "POST"}, {"allowPost": False}, allow=LOCAL)
    assert not refused.success and refused.error == "POST requests are not allowed for this tool"
    assert len(web.requests) == 1


async def test_text_and_size_limits(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"{web.url}/big"}, {"maxBytes": 10_000, "maxChars": 1_000}, allow=LOCAL)
    assert result.success, result.error
    assert len(result.data["content"]) == 1_000 and result.data["truncated"] is True


async def test_timeout(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"{web.url}/slow?s=1.5"}, {"timeoutSeconds": 0.2}, allow=LOCAL)
    assert not result.success and result.error == "timed out after 0.2 s"


async def test_redirects_are_followed_and_limited(run: Run, web: LocalWeb) -> None:
    ok = await run(FETCH, {"url": f"{web.url}/redirect?to=/page"}, allow=LOCAL)
    assert ok.data["url"] == f"{web.url}/page" and ok.data["redirects"] == [f"{web.url}/page"]
    looping = await run(FETCH, {"url": f"{web.url}/loop"}, {"maxRedirects": 2}, allow=LOCAL)
    assert not looping.success and looping.error == "too many redirects (more than 2)"


async def test_allowed_domains(run: Run, web: LocalWeb) -> None:
    config = {"allowedDomains": ["example.org"]}
    result = await run(FETCH, {"url": f"{web.url}/page"}, config, allow=LOCAL)
    assert not result.success
    assert result.error == "blocked: 127.0.0.1 is not in the allowed domains (example.org)"
    assert web.requests == []
    assert "Only these domains may be fetched: example.org." in FETCH.describe(FETCH.Config(**config))


async def test_http_errors_and_binary_bodies_fail(run: Run, web: LocalWeb) -> None:
    missing = await run(FETCH, {"url": f"{web.url}/nothing-here"}, allow=LOCAL)
    assert not missing.success and missing.error == f"HTTP 404 from {web.url}/nothing-here"
    assert missing.data["status"] == 404
    binary = await run(FETCH, {"url": f"{web.url}/binary"}, allow=LOCAL)
    assert not binary.success and binary.error == "unsupported content type image/png (only text is returned)"


async def test_bad_inputs(run: Run, web: LocalWeb) -> None:
    bad_method = await run(FETCH, {"url": f"{web.url}/page", "method": "DELETE"}, allow=LOCAL)
    assert not bad_method.success and "method: Input should be 'GET' or 'POST'" in bad_method.error
    no_url = await run(FETCH, {})
    assert not no_url.success and "url: Field required" in no_url.error
    not_a_url = await run(FETCH, {"url": "not a url"})
    assert not not_a_url.success and "only http and https URLs are allowed" in not_a_url.error
    assert web.requests == []
