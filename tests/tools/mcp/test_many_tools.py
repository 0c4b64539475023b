"""Servers that list many tools, against ``mcp_max_tools``: a server listing more is refused as a whole, its
rows left as they were and the admin told why; no page past the limit is asked for; a tool listed twice is
one tool. The peers are real MCP servers (the SDK's ``MCPServer``, and its low-level ``Server`` paging
its list) over streamable HTTP. (What a refresh of 20,000 tools costs other requests is measured by
``python -m bench.mcp_refresh``.)"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp.server.lowlevel import Server
from mcp.server.mcpserver import MCPServer

from tests.fakes.openai_server import ThreadedServer
from tests.support import ApiClient, LiveApp, running_app
from tests.tools.mcp.conftest import tools_by_name

Add = Callable[..., dict[str, Any]]
LIMIT = 5


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    yield from running_app(tmp_path, template_db, mcp_max_tools=LIMIT)


def add_tools(server: MCPServer, start: int, count: int) -> None:
    for i in range(start, start + count):
        server.add_tool(lambda q: q, name=f"tool_{i}", description=f"Tool number {i}.")


def test_a_server_listing_more_than_the_limit_is_refused_and_left_as_it_was(
    admin: ApiClient, allow_local: None, add_server: Add
) -> None:
    peer = MCPServer("many")
    add_tools(peer, 0, LIMIT)
    running = ThreadedServer(peer.streamable_http_app()).start()
    try:
        server = add_server("many", transport="http", url=f"{running.url}/mcp")
        tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
        assert len(tools) == LIMIT, "exactly the limit is taken"
        admin.ok("PUT", f"/api/agent-tools/{tools['tool_0']['toolId']}", json={"enabled": True})

        add_tools(peer, LIMIT, 3)
        r = admin.post(f"/api/admin/mcp-servers/{server['id']}/refresh")
        assert r.status_code == 502, r.text
        assert r.json()["error"] == {
            "code": "mcp_server_too_many_tools",
            "message": "MCP server 'many': it lists more than 5 tools, the most one server may have here "
                       "(AGENTLOFT_MCP_MAX_TOOLS); its tools were left as they were",
            "requestId": r.headers["x-request-id"]}
        kept = tools_by_name(admin.ok("GET", f"/api/admin/mcp-servers/{server['id']}/tools"))
        assert sorted(kept) == sorted(tools) and kept["tool_0"]["enabled"] is True
        assert not any(t["missing"] for t in kept.values()), "the tools past the limit took none away"
        shown = admin.ok("GET", f"/api/admin/mcp-servers/{server['id']}")
        assert shown["lastError"].startswith("it lists more than 5 tools") and shown["toolCount"] == LIMIT
    finally:
        running.stop()


def paging_server(pages: int, per_page: int, asked: list[str | None]) -> Server[Any]:
    """Lists ``pages`` pages of tools, noting each cursor it is asked for; the first page names one tool
    twice."""

    async def on_list(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        cursor = params.cursor if params else None
        asked.append(cursor)
        page = int(cursor or 0)
        names = [f"p{page}_t{i}" for i in range(per_page)]
        if page == 0:
            names.append(names[0])
        tools = [types.Tool(name=n, description=f"{n}.", input_schema={"type": "object"}) for n in names]
        return types.ListToolsResult(tools=tools, next_cursor=str(page + 1) if page + 1 < pages else None)

    async def on_call(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text=params.name)])

    return Server("pages", on_list_tools=on_list, on_call_tool=on_call)


def test_no_page_past_the_limit_is_asked_for(admin: ApiClient, allow_local: None, add_server: Add) -> None:
    asked: list[str | None] = []
    running = ThreadedServer(paging_server(pages=50, per_page=3, asked=asked).streamable_http_app()).start()
    try:
        server = add_server("pages", transport="http", url=f"{running.url}/mcp")
        r = admin.post(f"/api/admin/mcp-servers/{server['id']}/refresh")
        assert r.status_code == 502 and r.json()["error"]["code"] == "mcp_server_too_many_tools", r.text
        assert asked == [None, "1"], "the second page passed the limit; no third was asked for"
    finally:
        running.stop()


def test_a_tool_listed_twice_is_one_tool(admin: ApiClient, allow_local: None, add_server: Add) -> None:
    asked: list[str | None] = []
    running = ThreadedServer(paging_server(pages=1, per_page=3, asked=asked).streamable_http_app()).start()
    try:
        server = add_server("pages", transport="http", url=f"{running.url}/mcp")
        items = admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh")["items"]
        assert sorted(t["name"] for t in items) == ["p0_t0", "p0_t1", "p0_t2"]
        assert [t["slug"] for t in items] == ["pages__p0_t0", "pages__p0_t1", "pages__p0_t2"]
    finally:
        running.stop()
