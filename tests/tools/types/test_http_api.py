from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentloft.tools.types.http_api import TOOL_TYPE as API
from tests.tools.types.conftest import LOCAL, Run
from tests.tools.types.local_server import LocalWeb


def config(web: LocalWeb, **over: Any) -> dict[str, Any]:
    return {
        "baseUrl": f"{web.url}/echo",
        "method": "POST",
        "path": "/repos/{owner}/issues",
        "parameters": [
            {"name": "owner", "location": "path", "required": True, "description": "Repository owner"},
            {"name": "state", "location": "query", "description": "open or closed"},
            {"name": "limit", "location": "query", "type": "integer"},
            {"name": "title", "location": "body", "required": True},
            {"name": "urgent", "location": "body", "type": "boolean"},
        ],
        "headers": {"X-Client": "agentloft"},
        "secretHeaders": "Authorization: Bearer s3cret\nX-Api-Key: key-1",
        "fixedQuery": {"v": "2"},
        **over,
    }


async def test_calls_the_configured_endpoint(run: Run, web: LocalWeb) -> None:
    args = {"params": {"owner": "a b/c", "state": "open", "limit": 5, "title": "Bug", "urgent": True}}
    result = await run(API, args, config(web), allow=LOCAL)
    assert result.success, result.error
    sent = web.requests[-1]
    assert sent["method"] == "POST"
    assert sent["path"] == "/echo/repos/a b/c/issues" or sent["path"] == "/echo/repos/a%20b%2Fc/issues"
    assert sent["query"] == {"v": "2", "state": "open", "limit": "5"}
    assert sent["headers"]["authorization"] == "Bearer s3cret" and sent["headers"]["x-api-key"] == "key-1"
    assert sent["headers"]["x-client"] == "agentloft"
    assert result.data["status"] == 200 and result.data["body"]["method"] == "POST"
    import json

    assert json.loads(sent["body"]) == {"title": "Bug", "urgent": True}


async def test_get_without_body(run: Run, web: LocalWeb) -> None:
    cfg = config(web, method="GET", path="", parameters=[{"name": "q"}])
    result = await run(API, {"params": {"q": "x"}}, cfg, allow=LOCAL)
    assert result.success, result.error
    assert web.requests[-1]["body"] == "" and web.requests[-1]["query"] == {"v": "2", "q": "x"}


async def test_description_lists_the_parameters_and_hides_secrets(web: LocalWeb) -> None:
    text = API.describe(API.Config.model_validate(config(web)))
    assert "POST /repos/{owner}/issues" in text
    assert "- owner (string, required): Repository owner" in text
    assert "- limit (integer, optional)" in text
    assert "s3cret" not in text and web.url not in text
    assert API.secret_fields == ("secret_headers",)


async def test_parameters_are_checked_before_any_request(run: Run, web: LocalWeb) -> None:
    result = await run(API, {"params": {"owner": 1, "limit": "five", "urgent": "yes", "extra": 1}},
                       config(web), allow=LOCAL)
    assert not result.success
    for part in ("extra: not a parameter of this tool", "title: required", "owner: expected string, got int",
                 "limit: expected integer, got str", "urgent: expected boolean, got str"):
        assert part in result.error
    assert web.requests == []


async def test_http_errors_are_failed_results_with_the_body(run: Run, web: LocalWeb) -> None:
    cfg = config(web, method="GET", path="", parameters=[], fixedQuery={"status": "503"})
    result = await run(API, {}, cfg, allow=LOCAL)
    assert not result.success and result.error == "the API answered HTTP 503"
    assert result.data["body"]["query"] == {"status": "503"}


async def test_unconfigured_and_blocked(run: Run, web: LocalWeb) -> None:
    assert (await run(API, {})).error == "this API tool has no base URL configured"
    blocked = await run(API, {"params": {"owner": "x", "title": "t"}}, config(web))
    assert blocked.error.startswith("blocked: 127.0.0.1 is a loopback address")
    assert web.requests == []


def test_config_refuses_duplicate_parameters() -> None:
    with pytest.raises(ValidationError, match="duplicate parameter names: a"):
        API.Config.model_validate({"parameters": [{"name": "a"}, {"name": "a"}]})


async def test_bad_inputs(run: Run) -> None:
    result = await run(API, {"params": "owner=x"})
    assert not result.success and "params: Input should be a valid dictionary" in result.error


def climbing(web: LocalWeb) -> dict[str, Any]:
    """The endpoint of the attack: base .../api/public, two path parameters."""
    return config(web, baseUrl=f"{web.url}/echo/api/public", method="GET", path="/items/{a}/{b}",
                  parameters=[{"name": "a", "location": "path"}, {"name": "b", "location": "path"}])


@pytest.mark.parametrize("value", [
    "..", ".", "../..", "..\\..", "a/../b", "a\\..\\b", "%2e%2e", "%2E%2e", ".%2e", "%2e.", "..%2f..", "..%5c..",
    "%252e%252e", "%25252e%25252e", "\uff0e\uff0e", "\u2025", "\uff0e", "", "x/../../..",
])
async def test_path_parameters_cannot_leave_their_segment(run: Run, web: LocalWeb, value: str) -> None:
    for params in ({"a": value, "b": "x"}, {"a": "x", "b": value}):
        result = await run(API, {"params": params}, climbing(web), allow=LOCAL)
        assert not result.success, (params, result.data)
        assert result.error.startswith(("a: ", "b: ")), result.error
    assert web.requests == []  # refused before any request


@pytest.mark.parametrize(("value", "encoded"), [
    ("a/b", "a%2Fb"), ("a\\b", "a%5Cb"), ("q?x=1", "q%3Fx%3D1"), ("h#frag", "h%23frag"), ("50%", "50%25"),
    ("%2F", "%252F"), ("...", "..."), ("v1.2", "v1.2"), (".hidden", ".hidden"), ("a b", "a%20b"),
    ("\u00e9t\u00e9", "%C3%A9t%C3%A9"), (".. ", "..%20"),
])
async def test_other_values_are_encoded_into_one_segment(run: Run, web: LocalWeb, value: str, encoded: str) -> None:
    result = await run(API, {"params": {"a": value, "b": "end"}}, climbing(web), allow=LOCAL)
    assert result.success, result.error
    assert web.requests[-1]["rawPath"] == f"/echo/api/public/items/{encoded}/end"


async def test_a_template_with_a_dot_segment_is_refused(run: Run, web: LocalWeb) -> None:
    cfg = config(web, method="GET", path="/v1/../admin/{a}", parameters=[{"name": "a", "location": "path"}])
    result = await run(API, {"params": {"a": "x"}}, cfg, allow=LOCAL)
    assert not result.success and result.error == "the path /v1/../admin/x has a '.' or '..' segment"
    assert web.requests == []
