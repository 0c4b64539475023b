"""Calling MCP tools through the tool wrapper (the admin's execute endpoint runs exactly what a chat run
runs): text, structured data, an image, an embedded resource, a tool error, invalid input, a server that
went away; and the tool list following the server (list_changed, a tool that disappears)."""

from __future__ import annotations

import base64
import time
from collections.abc import Callable
from typing import Any

import pytest

from agentloft.tools.mcp.results import MAX_IMAGE_BYTES
from agentloft.tools.mcp.service import fit_slug
from tests.support import ApiClient
from tests.tools.mcp.conftest import TOKEN, HttpPeer, tools_by_name
from tests.tools.mcp.server_app import PNG

Add = Callable[..., dict[str, Any]]


@pytest.fixture
def http_tools(admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add) -> dict[str, Any]:
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    return {"server": server, **tools}


def execute(admin: ApiClient, tool: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    return admin.ok("POST", f"/api/agent-tools/{tool['toolId']}/execute", json={"input": args})


def test_text_and_structured_results(admin: ApiClient, http_tools: dict[str, Any]) -> None:
    shout = execute(admin, http_tools["shout"], {"text": "hi there"})
    assert shout["success"] is True and shout["data"] == {"result": "HI THERE"}
    assert shout["metadata"]["mcp"] == {"server": "testing", "tool": "shout"}
    assert shout["metadata"]["durationMs"] >= 0
    weather = execute(admin, http_tools["weather"], {"city": "Oslo"})
    assert weather["data"] == {"city": "Oslo", "celsius": 21.5, "sky": "clear"}


def test_image_and_embedded_resource(admin: ApiClient, http_tools: dict[str, Any]) -> None:
    picture = execute(admin, http_tools["picture"], {})
    assert picture["success"] is True and picture["data"] is None
    [image] = picture["files"]
    assert image["mediaType"] == "image/png" and base64.b64decode(image["data"]) == PNG
    captioned = execute(admin, http_tools["big_picture"], {"kib": 1})
    assert captioned["data"] == "1 KiB" and len(base64.b64decode(captioned["files"][0]["data"])) == 1024
    note = execute(admin, http_tools["note"], {})
    assert note["data"]["text"] == "here is the note"
    assert note["data"]["resources"] == [{"uri": "memo://note/1", "mimeType": "text/plain",
                                          "text": "remember the milk"}]


def test_audio_counts_against_the_output_limit_and_images_have_a_total(
    admin: ApiClient, http_tools: dict[str, Any]
) -> None:
    """Base64 a model can only read as text costs what text does: one call's clips share the tool's
    ``maxOutputChars`` (100,000 characters, about 73 KiB); the rest are named with their size. One call's
    images together stop at ``MAX_IMAGE_BYTES``."""
    small = execute(admin, http_tools["recording"], {"kib": 10})
    [clip] = small["data"]["audio"]
    assert clip["mimeType"] == "audio/wav" and len(base64.b64decode(clip["data"])) == 10 * 1024
    assert small["data"]["text"] == "1 x 10 KiB" and "leftOutChars" not in small["metadata"]

    three = execute(admin, http_tools["recording"], {"kib": 50, "clips": 3})
    first, *rest = three["data"]["audio"]
    assert len(base64.b64decode(first["data"])) == 50 * 1024
    assert rest == [{"mimeType": "audio/wav", "omitted": True, "size": 50 * 1024}] * 2
    assert three["metadata"]["leftOutChars"] == 2 * len(first["data"])

    huge = execute(admin, http_tools["recording"], {"kib": 8 * 1024})
    assert huge["data"]["audio"] == [{"mimeType": "audio/wav", "omitted": True, "size": 8 * 1024 * 1024}]

    per_image = 2 * 1024 * 1024  # two fit in the total, the third and fourth do not
    assert 2 * per_image <= MAX_IMAGE_BYTES < 3 * per_image
    album = execute(admin, http_tools["pictures"], {"count": 4, "kib": per_image // 1024})
    assert [len(base64.b64decode(f["data"])) for f in album["files"]] == [per_image] * 2
    assert album["data"] == {"images": [{"mimeType": "image/png", "omitted": True, "size": per_image}] * 2}


def test_tool_error_is_a_failed_result(admin: ApiClient, http_tools: dict[str, Any]) -> None:
    broken = execute(admin, http_tools["broken"], {"reason": "the disk is full"})
    assert broken["success"] is False and "the disk is full" in broken["error"]


def test_input_is_checked_against_the_servers_schema(
    admin: ApiClient, http_tools: dict[str, Any], mcp_http: HttpPeer
) -> None:
    before = len(mcp_http.guard.headers)
    bad = execute(admin, http_tools["add"], {"a": "one"})
    assert bad["success"] is False
    assert bad["error"].startswith("invalid input: ")
    assert "a: 'one' is not of type 'integer'" in bad["error"] and "'b' is a required property" in bad["error"]
    assert len(mcp_http.guard.headers) == before, "invalid input never reaches the server"
    assert execute(admin, http_tools["add"], {"a": 2, "b": 3})["data"] == {"result": 5}


def test_a_server_that_went_away_is_a_failed_result(
    admin: ApiClient, http_tools: dict[str, Any], mcp_http: HttpPeer
) -> None:
    assert execute(admin, http_tools["add"], {"a": 1, "b": 1})["success"]
    mcp_http.server.stop()
    gone = execute(admin, http_tools["add"], {"a": 1, "b": 1})
    assert gone["success"] is False and gone["error"].startswith("MCP server 'testing': "), gone


def test_disabled_server_refuses_calls(admin: ApiClient, http_tools: dict[str, Any]) -> None:
    admin.ok("PUT", f"/api/admin/mcp-servers/{http_tools['server']['id']}", json={"enabled": False})
    result = execute(admin, http_tools["add"], {"a": 1, "b": 1})
    assert result == {**result, "success": False, "error": "the MCP server 'testing' is disabled"}


def wait_for(check: Callable[[], bool], what: str, limit_s: float = 10.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_list_changed_adds_the_new_tool(admin: ApiClient, http_tools: dict[str, Any]) -> None:
    server_id = http_tools["server"]["id"]
    assert "extra" not in tools_by_name(admin.ok("GET", f"/api/admin/mcp-servers/{server_id}/tools"))
    assert execute(admin, http_tools["grow"], {})["data"] == {"result": "grown"}
    wait_for(lambda: "extra" in tools_by_name(admin.ok("GET", f"/api/admin/mcp-servers/{server_id}/tools")),
             "the list_changed refresh")
    extra = tools_by_name(admin.ok("GET", f"/api/admin/mcp-servers/{server_id}/tools"))["extra"]
    assert extra["enabled"] is False and extra["description"] == "Added at run time."


def test_a_vanished_tool_is_disabled_and_marked_missing_links_kept(
    admin: ApiClient, http_tools: dict[str, Any], make_agent: Callable[..., dict[str, Any]]
) -> None:
    weather = http_tools["weather"]
    admin.ok("PUT", f"/api/agent-tools/{weather['toolId']}", json={"enabled": True})
    agent = make_agent("forecaster")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": weather["toolId"]}])
    execute(admin, http_tools["shrink"], {"name": "weather"})
    server_id = http_tools["server"]["id"]
    wait_for(lambda: tools_by_name(admin.ok("GET", f"/api/admin/mcp-servers/{server_id}/tools"))["weather"]["missing"],
             "the tool to be marked missing")
    gone = tools_by_name(admin.ok("GET", f"/api/admin/mcp-servers/{server_id}/tools"))["weather"]
    assert gone["enabled"] is False
    links = admin.ok("GET", f"/api/admin/agents/{agent['id']}/tools")["items"]
    assert [link["toolId"] for link in links] == [weather["toolId"]]
    failed = execute(admin, weather, {"city": "Oslo"})
    assert failed["error"] == "the MCP server no longer offers the tool 'weather'"


def test_a_changed_description_disables_an_enabled_tool(
    app: Any, admin: ApiClient, http_tools: dict[str, Any]
) -> None:
    add = http_tools["add"]
    admin.ok("PUT", f"/api/agent-tools/{add['toolId']}", json={"enabled": True})
    # as if the server had said something else last time
    row = admin.ok("GET", f"/api/agent-tools/{add['toolId']}")
    admin.ok("PUT", f"/api/agent-tools/{add['toolId']}", json={"config": {**row["config"], "description": "old"}})
    refreshed = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{http_tools['server']['id']}/refresh"))
    assert refreshed["add"]["enabled"] is False and refreshed["add"]["changed"] is True
    assert refreshed["add"]["description"] == "Add two integers."


@pytest.mark.parametrize(
    ("server", "tool", "expected"),
    [
        ("github", "create_issue", "github__create_issue"),
        ("github", "Create Issue!", "github__create-issue-"),
        ("fs", "read.file/v2", "fs__read-file-v2"),
    ],
)
def test_slugs_follow_the_slug_rule(server: str, tool: str, expected: str) -> None:
    assert fit_slug(server_slug=server, tool_name=tool, taken=set()) == expected


def test_long_or_taken_slugs_get_a_hash_suffix() -> None:
    long_name = "x" * 80
    slug = fit_slug(server_slug="server", tool_name=long_name, taken=set())
    assert len(slug) == 64 and slug.startswith("server__xxx") and slug[-7] == "-"
    assert fit_slug(server_slug="server", tool_name=long_name, taken=set()) == slug, "stable"
    taken = fit_slug(server_slug="a", tool_name="b", taken={"a__b"})
    assert taken.startswith("a__b-") and len(taken) == len("a__b-") + 6
    assert fit_slug(server_slug="a", tool_name="b", taken={"a__b", taken}) not in {"a__b", taken}
