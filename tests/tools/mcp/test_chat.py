"""MCP tools in a chat: the model gets the server's name-fitted slug, description and input schema, its
call runs on the MCP server and the result streams back; admin-only MCP tools never reach a non-admin's
model (nor the plain LLM chat's tool list)."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest

from agentloft.chat import toolset
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient
from tests.tools.mcp.conftest import TOKEN, HttpPeer, tools_by_name
from tests.tools.mcp.server_app import PNG

Add = Callable[..., dict[str, Any]]


def model_tools(request: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["function"]["name"]: t["function"] for t in request.get("tools", [])}


def test_agent_calls_an_mcp_tool(
    admin: ApiClient, user: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add,
    make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel,
) -> None:
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    for name in ("add", "weather"):
        admin.ok("PUT", f"/api/agent-tools/{tools[name]['toolId']}", json={"enabled": True})
    admin.ok("PUT", f"/api/agent-tools/{tools['weather']['toolId']}", json={"adminOnly": True})
    agent = make_agent("calc")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools",
             json=[{"toolId": tools["add"]["toolId"]}, {"toolId": tools["weather"]["toolId"]}])

    fake_model.push(call("testing__add", {"a": 20, "b": 22}), text("It is 42."))
    reply = chat(user, "calc", "what is 20 + 22?")
    assert reply.status == 200, reply.body
    [output] = reply.of("tool-output-available")
    assert output["output"]["success"] is True and output["output"]["data"] == {"result": 42}
    assert reply.text == "It is 42."

    offered = model_tools(fake_model.requests[0])
    assert set(offered) == {"testing__add"}, "the admin-only MCP tool is not offered to a user"
    assert offered["testing__add"]["description"] == "Add two integers."
    assert offered["testing__add"]["parameters"]["required"] == ["a", "b"]
    # what a chat page lists for the user: the same
    listed = user.ok("GET", "/api/llm/chat/tools?agent=calc")["items"]
    assert [t["name"] for t in listed] == ["testing__add"]
    assert {t["name"] for t in admin.ok("GET", "/api/llm/chat/tools?agent=calc")["items"]} == {
        "testing__add", "testing__weather"}


def test_a_user_cannot_run_a_hidden_mcp_tool_by_naming_it(
    admin: ApiClient, user: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add,
    make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel,
) -> None:
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    admin.ok("PUT", f"/api/agent-tools/{tools['whoami']['toolId']}", json={"enabled": True, "adminOnly": True})
    agent = make_agent("sneaky")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": tools["whoami"]["toolId"]}])
    calls_before = len(mcp_http.guard.headers)
    fake_model.push(call("testing__whoami", {}), text("done"))
    reply = chat(user, "sneaky", "who are you?")
    assert reply.status == 200
    assert not reply.of("tool-output-available"), "the hidden tool never ran"
    assert len(mcp_http.guard.headers) == calls_before, "nothing reached the MCP server"


def test_a_disabled_servers_tools_leave_the_very_next_turn(
    admin: ApiClient, user: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add,
    make_agent: Callable[..., dict[str, Any]], fake_model: FakeModel,
) -> None:
    """Disabling a server takes its (enabled) tools away from every model and chat listing at once, the
    read cache notwithstanding; the admin still sees them, marked; enabling it again brings them back."""
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    add_id = tools["add"]["toolId"]
    admin.ok("PUT", f"/api/agent-tools/{add_id}", json={"enabled": True})
    agent = make_agent("calc")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=[{"toolId": add_id}])

    def offered() -> tuple[set[str], set[str]]:
        """What the agent's model and the plain LLM chat's model are given, on a fresh turn each."""
        chat(user, "calc", "hello")
        by_agent = set(model_tools(fake_model.requests[-1]))
        user.post("/api/llm/chat", json={"message": "hello"})
        return by_agent, set(model_tools(fake_model.requests[-1]))

    def listed(path: str) -> set[str]:
        return {t["name"] for t in user.ok("GET", path)["items"]}

    offered()  # warm the read cache
    assert offered() == ({"testing__add"}, {"testing__add"})
    assert listed("/api/llm/chat/tools?agent=calc") == listed("/api/llm/chat/tools") == {"testing__add"}
    assert admin.ok("GET", f"/api/agent-tools/{add_id}")["unavailable"] is None

    admin.ok("PUT", f"/api/admin/mcp-servers/{server['id']}", json={"enabled": False})
    assert offered() == (set(), set())
    assert listed("/api/llm/chat/tools?agent=calc") == listed("/api/llm/chat/tools") == set()
    shown = {t["slug"]: t for t in admin.ok("GET", "/api/agent-tools?pageSize=100")["items"]}["testing__add"]
    assert shown["enabled"] is True and shown["unavailable"] == "its MCP server 'testing' is disabled"
    assert [link["slug"] for link in admin.ok("GET", f"/api/admin/agents/{agent['id']}/tools")["items"]] == [
        "testing__add"], "the agent keeps its link"

    admin.ok("PUT", f"/api/admin/mcp-servers/{server['id']}", json={"enabled": True})
    assert offered() == ({"testing__add"}, {"testing__add"})


def _image_urls(request: dict[str, Any]) -> list[str]:
    """The images a chat-completions request gives the model (content parts of its messages)."""
    return [p["image_url"]["url"] for m in request["messages"] if isinstance(m.get("content"), list)
            for p in m["content"] if p.get("type") == "image_url"]


@pytest.fixture
def picture_agent(
    admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add, make_agent: Callable[..., dict[str, Any]]
) -> str:
    server = add_server(transport="http", url=mcp_http.url, secret=TOKEN)
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    links = []
    for name in ("picture", "big_picture", "pictures", "recording"):
        admin.ok("PUT", f"/api/agent-tools/{tools[name]['toolId']}", json={"enabled": True})
        links.append({"toolId": tools[name]["toolId"]})
    agent = make_agent("painter")
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=links)
    return "painter"


def test_an_mcp_image_reaches_the_model_as_an_image(
    user: ApiClient, picture_agent: str, fake_model: FakeModel
) -> None:
    """Not base64 inside the JSON result: the chat-completions API takes no images in tool messages, so
    the image follows the tool results as an image part; the stream and the saved message carry it for
    the tool card; and the next turn's history still has it."""
    fake_model.push(call("testing__picture", {}), text("A red square."))
    reply = chat(user, picture_agent, "draw")
    assert reply.status == 200, reply.body
    encoded = base64.b64encode(PNG).decode()
    [output] = reply.of("tool-output-available")
    result, image = output["output"]
    assert result["success"] is True and "files" not in result
    assert image["kind"] == "binary" and image["media_type"] == "image/png" and image["data"] == encoded

    second = fake_model.requests[1]
    [tool_message] = [m for m in second["messages"] if m["role"] == "tool"]
    assert encoded not in json.dumps(tool_message), "no base64 in the tool result's text"
    assert _image_urls(second) == [f"data:image/png;base64,{encoded}"]

    saved = user.ok("GET", f"/api/agent-sessions/{reply.session_id}")["messages"][-1]["parts"]
    [part] = [p for p in saved if p["type"] == "tool-testing__picture"]
    assert part["output"] == output["output"]
    chat(user, picture_agent, "what colour was it?", session_id=reply.session_id)
    assert _image_urls(fake_model.requests[-1]) == [f"data:image/png;base64,{encoded}"]


def test_large_images_are_not_kept_in_messages_and_huge_ones_not_sent(
    user: ApiClient, picture_agent: str, fake_model: FakeModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_model.push(call("testing__big_picture", {"kib": 300}), text("Big."))
    reply = chat(user, picture_agent, "draw big")
    [output] = reply.of("tool-output-available")
    streamed = output["output"][1]
    assert len(base64.b64decode(streamed["data"])) == 300 * 1024, "the live stream shows the whole image"
    assert len(_image_urls(fake_model.requests[1])) == 1, "the model gets it"
    saved = user.ok("GET", f"/api/agent-sessions/{reply.session_id}")["messages"][-1]["parts"]
    [part] = [p for p in saved if p["type"] == "tool-testing__big_picture"]
    kept = part["output"][1]
    assert kept["data"] is None and kept["omitted"] is True and kept["size"] == 300 * 1024
    assert part["output"][0]["data"] == "300 KiB"

    monkeypatch.setattr(toolset, "MAX_FILE_BYTES", 100 * 1024)
    fake_model.push(call("testing__big_picture", {"kib": 300}), text("Too big."))
    reply = chat(user, picture_agent, "draw bigger")
    note = reply.of("tool-output-available")[0]["output"][1]
    assert note == f"A image/png file of {300 * 1024:,} bytes was left out: larger than {100 * 1024:,} bytes."
    assert _image_urls(fake_model.requests[-1]) == []
    assert note in json.dumps(fake_model.requests[-1]["messages"])


def test_a_huge_recording_or_album_stays_out_of_every_later_request(
    user: ApiClient, picture_agent: str, fake_model: FakeModel
) -> None:
    """A server answering with megabytes of audio, or a pile of large pictures: the model hears what was
    left out instead of getting it (again with every later request of the run)."""
    fake_model.push(call("testing__recording", {"kib": 4 * 1024}), call("testing__pictures", {"count": 4, "kib": 2048}),
                    text("Heard and seen."))
    reply = chat(user, picture_agent, "record and paint")
    assert reply.text == "Heard and seen."
    after_recording, after_album = fake_model.requests[1], fake_model.requests[2]
    assert len(json.dumps(after_recording)) < 50_000
    [heard] = [json.loads(m["content"]) for m in after_recording["messages"] if m["role"] == "tool"]
    assert heard["data"]["audio"] == [{"mimeType": "audio/wav", "omitted": True, "size": 4 * 1024 * 1024}]
    assert len(_image_urls(after_album)) == 2  # 4 MiB of the four pictures' 8 MiB
    assert len(json.dumps(after_album)) < 2 * 2 * 1024 * 1024 * 4 // 3 + 50_000
    result, *files = json.loads([m for m in after_album["messages"] if m["role"] == "tool"][-1]["content"])
    assert len(files) == 2  # pydantic-ai's pointers to the two images sent after the tool results
    seen = json.loads(result)
    assert seen["data"] == {"images": [{"mimeType": "image/png", "omitted": True, "size": 2 * 1024 * 1024}] * 2}
