"""The knowledge tool in a real chat turn (fake model over HTTP): the model's query reaches the admin's
collections and the best chunks come back with file name, page and chunk id; a user's own collection
cannot be configured; hiding rules as for every tool."""

from __future__ import annotations

from collections.abc import Callable

from tests.chat.helpers import attach, chat, make_agent, make_tool
from tests.fakes.openai_server import FakeModel, call, text
from tests.knowledge.helpers import indexed
from tests.support import ApiClient

HANDBOOK = [("keys.md", "# Keys\n\nRotate the signing key every ninety days."),
            ("备份.md", "# 备份\n\n数据库每天凌晨备份一次。")]


def knowledge_agent(admin: ApiClient, model_id: int, collection_ids: list[str], **tool: object) -> str:
    agent = make_agent(admin, "helper", modelId=model_id)
    made = make_tool(admin, "handbook", "knowledge", config={"collectionIds": collection_ids, "topK": 3}, **tool)
    attach(admin, agent["id"], {"toolId": made["id"]})
    return made["id"]


def test_the_model_searches_the_admins_collection_for_a_user(
    admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    kb = indexed(admin, *HANDBOOK)
    knowledge_agent(admin, model_id, [kb])
    fake_model.push(call("handbook", {"query": "数据库多久备份"}, id="c1"), text("每天凌晨。"))
    res = chat(user, "helper", "数据库多久备份一次？")
    (output,) = [c["output"] for c in res.of("tool-output-available") if c["toolCallId"] == "c1"]
    out = output["data"]
    assert output["success"] is True and out["query"] == "数据库多久备份" and out["mode"] == "lexical"
    top = out["results"][0]
    assert (top["fileName"], top["page"], top["text"]) == ("备份.md", None, "备份\n\n数据库每天凌晨备份一次。")
    assert isinstance(top["chunkId"], int) and len(out["results"]) <= 3
    # the reply's sources: streamed and kept with the message
    expected = {"toolCallId": "c1", "sources": [{k: r[k] for k in ("chunkId", "fileName", "page", "text")}
                                                for r in out["results"]]}
    assert [c["data"] for c in res.of("data-knowledge-sources")] == [expected]
    parts = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][1]["parts"]
    assert {"type": "data-knowledge-sources", "data": expected} in parts
    # what the model was sent: the tool, described, and its result
    tools = fake_model.requests[0]["tools"]
    assert [t["function"]["name"] for t in tools] == ["handbook"]
    assert "up to 3 passages" in tools[0]["function"]["description"]
    sent = fake_model.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and "数据库每天凌晨备份一次" in sent["content"]


def test_a_users_own_collection_makes_the_tool_unavailable(
    admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    private = indexed(user, *HANDBOOK)
    tool_id = knowledge_agent(admin, model_id, [private])
    shown = admin.ok("GET", f"/api/agent-tools/{tool_id}")
    assert shown["unavailable"] == f"knowledge collection {private} does not exist or is not an admin's"
    fake_model.push(text("I have no tools."))
    chat(user, "helper", "what about keys?")
    assert not fake_model.requests[0].get("tools")


def test_a_demoted_owner_s_collection_is_not_searched(
    admin: ApiClient, make_user: Callable[..., ApiClient], user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    other_admin = make_user("carol", role="admin")
    kb = indexed(other_admin, *HANDBOOK)
    tool_id = knowledge_agent(admin, model_id, [kb])
    assert admin.ok("GET", f"/api/agent-tools/{tool_id}")["unavailable"] is None
    carol = next(u for u in admin.ok("GET", "/api/admin/users")["items"] if u["username"] == "carol")
    admin.ok("PATCH", f"/api/admin/users/{carol['id']}", json={"role": "user"})
    assert admin.ok("GET", f"/api/agent-tools/{tool_id}")["unavailable"] == (
        f"knowledge collection {kb} does not exist or is not an admin's")
    fake_model.push(text("No tools."))
    chat(user, "helper", "keys?")
    assert not fake_model.requests[0].get("tools")


def test_an_admin_only_knowledge_tool_never_reaches_a_users_model(
    admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    kb = indexed(admin, *HANDBOOK)
    knowledge_agent(admin, model_id, [kb], adminOnly=True)
    fake_model.push(text("Hello."))
    chat(user, "helper", "hi")
    assert not fake_model.requests[0].get("tools")


def test_an_empty_tool_cannot_be_enabled(admin: ApiClient) -> None:
    resp = admin.post("/api/agent-tools", json={"slug": "kb", "name": "kb", "type": "knowledge", "enabled": True})
    assert resp.status_code == 422
    assert resp.json()["error"]["fieldCodes"]["config.collectionIds"]["code"] == "required_to_enable"
