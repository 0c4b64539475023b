"""MCP servers that say what ``MCPServer`` never would (``odd_server``, the SDK's low-level server):
hand-written schemas with ``$ref``/``$defs``, ``anyOf``/``oneOf``, enums and no ``properties`` reach the
model as written and bind the model's arguments; a huge description is kept within its limit; outputs of
megabytes are cut to the tool's ``maxOutputChars`` before they reach the model or the saved message."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from tests.chat.helpers import chat, parse_sse, wait_for
from tests.fakes.openai_server import FakeModel, ThreadedServer, call, text
from tests.support import ApiClient, LiveApp
from tests.tools.mcp import odd_server
from tests.tools.mcp.conftest import tools_by_name

Add = Callable[..., dict[str, Any]]
ODD_TOOLS = ["bare", "dirty", "dirty_structured", "draw", "flood", "flood_resource", "flood_structured", "latin1",
             "nul", "sleepy", "verbose"]


@pytest.fixture
def odd_http() -> Iterator[ThreadedServer]:
    server = ThreadedServer(odd_server.build().streamable_http_app()).start()
    yield server
    server.stop()


@pytest.fixture
def odd_tools(admin: ApiClient, odd_http: ThreadedServer, allow_local: None, add_server: Add) -> dict[str, Any]:
    server = add_server("odd", transport="http", url=f"{odd_http.url}/mcp")
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    assert sorted(tools) == ODD_TOOLS
    for tool in tools.values():
        admin.ok("PUT", f"/api/agent-tools/{tool['toolId']}", json={"enabled": True})
    return {"server": server, **tools}


def execute(admin: ApiClient, tool: dict[str, Any], args: dict[str, Any]) -> dict[str, Any]:
    return admin.ok("POST", f"/api/agent-tools/{tool['toolId']}/execute", json={"input": args})


def set_config(admin: ApiClient, tool: dict[str, Any], **changes: Any) -> None:
    row = admin.ok("GET", f"/api/agent-tools/{tool['toolId']}")
    admin.ok("PUT", f"/api/agent-tools/{tool['toolId']}", json={"config": {**row["config"], **changes}})


def test_hand_written_schemas_bind_the_arguments(admin: ApiClient, odd_tools: dict[str, Any]) -> None:
    good = {"start": {"x": 1, "y": 2}, "end": {"x": 3, "y": 4}, "colour": "red", "label": None,
            "shape": {"kind": "circle", "r": 1}, "tags": [{"k": "a", "v": "b"}]}
    drawn = execute(admin, odd_tools["draw"], good)
    assert drawn["data"] == "draw: ['colour', 'end', 'label', 'shape', 'start', 'tags']"
    bad = execute(admin, odd_tools["draw"], {"start": {"x": 1}, "end": {"x": 3, "y": 4, "z": 5}, "colour": "pink",
                                             "shape": {"kind": "square"}})
    assert bad["success"] is False
    for expected in ("colour: 'pink' is not one of ['red', 'green', 'blue']", "start: 'y' is a required property",
                     "end: Additional properties are not allowed", "shape: "):
        assert expected in bad["error"], bad["error"]
    assert execute(admin, odd_tools["bare"], {"anything": [1, {"at": "all"}]})["data"] == "bare: ['anything']"
    assert len(odd_tools["verbose"]["description"]) == 20_000


def test_the_model_gets_the_schemas_as_written(
    admin: ApiClient, user: ApiClient, odd_tools: dict[str, Any], make_agent: Callable[..., dict[str, Any]],
    fake_model: FakeModel,
) -> None:
    agent = make_agent("odd")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools",
             json=[{"toolId": odd_tools[name]["toolId"]} for name in ("draw", "bare")])
    fake_model.push(call("odd__draw", {"start": {"x": 1, "y": 2}, "end": {"x": 3, "y": 4}}), text("drawn"))
    reply = chat(user, "odd", "draw a line")
    assert reply.text == "drawn"
    [output] = reply.of("tool-output-available")
    assert output["output"]["data"] == "draw: ['end', 'start']"
    offered = {t["function"]["name"]: t["function"]["parameters"] for t in fake_model.requests[0]["tools"]}
    assert offered["odd__draw"] == odd_server.REF_SCHEMA
    assert offered["odd__bare"]["type"] == "object"


def test_nul_in_a_tools_text_is_kept_to_the_model_and_stored_without_it(
    admin: ApiClient, user: ApiClient, odd_tools: dict[str, Any], make_agent: Callable[..., dict[str, Any]],
    fake_model: FakeModel,
) -> None:
    assert execute(admin, odd_tools["nul"], {})["data"] == "before\x00after"
    agent = make_agent("odd")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": odd_tools["nul"]["toolId"]}])
    fake_model.push(call("odd__nul", {}), text("read it"))
    reply = chat(user, "odd", "read")
    assert reply.text == "read it"
    saved = user.ok("GET", f"/api/agent-sessions/{reply.session_id}")["messages"][-1]
    assert saved["status"] == "complete"
    [part] = [p for p in saved["parts"] if p["type"] == "tool-odd__nul"]
    assert part["output"]["data"] in ("before\ufffdafter", "before\x00after")


LIMIT = 100_000


@pytest.mark.parametrize("name", ["flood", "flood_structured", "flood_resource"])
def test_a_huge_output_is_cut_to_the_tools_limit(admin: ApiClient, odd_tools: dict[str, Any], name: str) -> None:
    result = execute(admin, odd_tools[name], {})
    assert result["success"] is True
    data = result["data"]
    shown = data if isinstance(data, str) else json.dumps(data)
    assert LIMIT < len(shown) < LIMIT + 1_000, len(shown)
    assert "more characters of this output were left out]" in shown
    assert result["metadata"]["leftOutChars"] > 2_000_000


def test_the_limit_is_the_admins_and_survives_a_refresh(admin: ApiClient, odd_tools: dict[str, Any]) -> None:
    flood = odd_tools["flood"]
    set_config(admin, flood, maxOutputChars=5_000, timeoutSeconds=5)
    result = execute(admin, flood, {})
    assert result["data"] == "x" * 5_000 + f"\n\n[{odd_server.BIG_TEXT_CHARS - 5_000:,} more characters of this " \
                                           "output were left out]"
    admin.ok("POST", f"/api/admin/mcp-servers/{odd_tools['server']['id']}/refresh")
    config = admin.ok("GET", f"/api/agent-tools/{flood['toolId']}")["config"]
    assert (config["maxOutputChars"], config["timeoutSeconds"]) == (5_000, 5)
    short = execute(admin, odd_tools["bare"], {})
    assert "leftOutChars" not in short["metadata"]


def test_a_huge_output_stays_out_of_the_models_requests_and_the_saved_message(
    admin: ApiClient, user: ApiClient, odd_tools: dict[str, Any], make_agent: Callable[..., dict[str, Any]],
    fake_model: FakeModel,
) -> None:
    agent = make_agent("odd")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": odd_tools["flood"]["toolId"]}])
    fake_model.push(call("odd__flood", {}), text("that was long"))
    reply = chat(user, "odd", "read the log")
    assert reply.text == "that was long"
    assert len(json.dumps(fake_model.requests[1])) < 3 * LIMIT
    saved = user.ok("GET", f"/api/agent-sessions/{reply.session_id}")["messages"][-1]
    assert len(json.dumps(saved)) < 3 * LIMIT


def test_half_a_surrogate_pair_in_an_answer_over_http(admin: ApiClient, odd_tools: dict[str, Any]) -> None:
    """A server that cut an emoji in half (``"\\ud83d"`` in its JSON): the answer arrives, the half
    replaced by U+FFFD, and the connection goes on."""
    dirty = execute(admin, odd_tools["dirty"], {})
    assert dirty["success"] is True, dirty
    assert dirty["data"] == "before\x00after \ufffd end"
    assert execute(admin, odd_tools["bare"], {})["success"] is True


def test_half_a_surrogate_pair_in_an_answer_over_stdio(admin: ApiClient, add_server: Add) -> None:
    server = add_server("oddio", transport="stdio", command=sys.executable, args=[odd_server.__file__])
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    set_config(admin, tools["dirty"], timeoutSeconds=10)  # without the repair the call waited this long
    dirty = execute(admin, tools["dirty"], {})
    assert dirty["success"] is True, dirty
    assert dirty["data"] == "before\x00after \ufffd end"
    assert execute(admin, tools["bare"], {})["data"] == "bare: []"


def test_a_users_stop_while_an_mcp_tool_runs_cancels_the_call(
    app: LiveApp, admin: ApiClient, user: ApiClient, odd_tools: dict[str, Any],
    make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel,
) -> None:
    odd_server.SLEEPS.clear()
    agent = make_agent("odd")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": odd_tools["sleepy"]["toolId"]}])
    fake_model.push(call("odd__sleepy", {"seconds": 30}), text("never said"))
    with user.stream("POST", "/api/agents/odd/chat", json={"message": "sleep"}) as running:
        session_id = running.headers["x-session-id"]
        wait_for(lambda: odd_server.SLEEPS == ["started"])
        assert user.ok("POST", f"/api/agent-sessions/{session_id}/stop") == {"stopped": True}
        chunks = parse_sse(running.read().decode())
    assert [c["type"] for c in chunks if isinstance(c, dict)][-1] == "abort" and chunks[-1] == "[DONE]"
    wait_for(lambda: odd_server.SLEEPS == ["started", "cancelled"])
    wait_for(lambda: app.sql("SELECT status FROM agent_sessions WHERE id = ?", (session_id,)) == [("idle",)])
    assert len(fake_model.requests) == 1, "the model was not asked again"
    assert execute(admin, odd_tools["bare"], {})["success"] is True, "the connection is still good"


def _many(name: str, count: int) -> MCPServer:
    server = MCPServer(name)
    for i in range(count):
        server.add_tool(lambda q: q, name=f"tool_{i}", description=f"Tool number {i}.")
    server.add_tool(lambda q: f"{name}: {q}", name="search", description=f"Search {name}.")
    return server


def test_hundreds_of_tools_and_one_name_on_two_servers(admin: ApiClient, allow_local: None, add_server: Add) -> None:
    big = ThreadedServer(_many("big", 400).streamable_http_app()).start()
    small = ThreadedServer(_many("small", 3).streamable_http_app()).start()
    try:
        first = add_server("big", transport="http", url=f"{big.url}/mcp")
        second = add_server("small", transport="http", url=f"{small.url}/mcp")
        listed = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{first['id']}/refresh"))
        assert len(listed) == 401
        assert len(tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{first['id']}/refresh"))) == 401
        other = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{second['id']}/refresh"))
        searches = (listed["search"], other["search"])
        assert [t["slug"] for t in searches] == ["big__search", "small__search"]
        for tool, answer in zip(searches, ("big: x", "small: x"), strict=True):
            admin.ok("PUT", f"/api/agent-tools/{tool['toolId']}", json={"enabled": True})
            assert execute(admin, tool, {"q": "x"})["data"] == answer
    finally:
        big.stop()
        small.stop()


def test_a_restarted_server_is_spoken_to_again(
    admin: ApiClient, odd_tools: dict[str, Any], odd_http: ThreadedServer
) -> None:
    """The server went down and came back on the same address (its sessions forgotten)."""
    assert execute(admin, odd_tools["bare"], {})["success"] is True
    odd_http.stop()
    again = ThreadedServer(odd_server.build().streamable_http_app(), port=odd_http.port).start()
    try:
        assert execute(admin, odd_tools["bare"], {})["data"] == "bare: []"
    finally:
        again.stop()


def test_a_stdio_server_that_greets_on_stdout_first(admin: ApiClient, add_server: Add) -> None:
    """Many servers print a line of their own before speaking the protocol; it is passed over."""
    server = add_server("oddio", transport="stdio", command=sys.executable, args=[odd_server.__file__],
                        env={"BANNER": "Odd server 1.0 starting on stdio..."})
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    assert sorted(tools) == ODD_TOOLS
    assert execute(admin, tools["bare"], {})["data"] == "bare: []"


def test_an_answer_that_is_not_utf8_over_stdio(admin: ApiClient, add_server: Add) -> None:
    """A stdio server that writes its text in Latin-1: that call fails at once, saying so, and the server
    goes on answering the other calls."""
    server = add_server("oddio", transport="stdio", command=sys.executable, args=[odd_server.__file__])
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    set_config(admin, tools["latin1"], timeoutSeconds=20)  # without the fix the call waited this long
    with ThreadPoolExecutor(1) as pool:  # another call of the same server, running meanwhile
        assert execute(admin, tools["sleepy"], {"seconds": 0})["data"] == "awake"  # the process is up
        other = pool.submit(execute, admin, tools["sleepy"], {"seconds": 2})
        started = time.monotonic()
        bad = execute(admin, tools["latin1"], {})
        assert time.monotonic() - started < 10
        assert other.result()["data"] == "awake"
    assert bad["success"] is False
    # Said as what happened here, not as an error the server answered with.
    assert bad["error"] == ("MCP server 'oddio': its answer was not UTF-8 text (2 byte(s) that UTF-8 does not "
                            "allow, the first 0xE9), so it was not used; an MCP server must write UTF-8 on stdout")
    assert execute(admin, tools["bare"], {})["data"] == "bare: []"  # the same server process goes on
    assert execute(admin, tools["bare"], {})["success"] is True
