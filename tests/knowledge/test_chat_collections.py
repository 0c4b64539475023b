"""A user's own collections attached to a chat (``chat.knowledge``), with the fake model over real HTTP:
the model gets a tool for exactly those collections and the chunks it finds; the set is kept on the
session through later turns and a regeneration, replaced or cleared when sent again; another user's or
a missing id is refused before anything is written; a deleted collection drops out."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.chat.helpers import Streamed, attach, make_agent, make_tool, post_stream
from tests.fakes.openai_server import FakeModel, call, text
from tests.knowledge.helpers import indexed
from tests.support import ApiClient

NOTES = [("keys.md", "# Keys\n\nRotate the signing key every ninety days."),
         ("备份.md", "# 备份\n\n数据库每天凌晨备份一次。")]
LLM = "/api/llm/chat"


def llm_chat(client: ApiClient, message: str, **body: Any) -> Streamed:
    return post_stream(client, LLM, {"message": message, **body})


def tool_names(request: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools") or []]


def test_the_model_searches_the_users_own_collection(user: ApiClient, model_id: int, fake_model: FakeModel) -> None:
    kb = indexed(user, *NOTES, name="My notes")
    fake_model.push(call("my_knowledge", {"query": "数据库多久备份"}, id="c1"), text("每天凌晨。"))
    res = llm_chat(user, "数据库多久备份一次？", knowledgeIds=[kb])
    assert res.status == 200, res.body
    (output,) = [c["output"] for c in res.of("tool-output-available") if c["toolCallId"] == "c1"]
    top = output["data"]["results"][0]
    assert (top["fileName"], top["text"]) == ("备份.md", "备份\n\n数据库每天凌晨备份一次。")
    sources = [c["data"] for c in res.of("data-knowledge-sources")]
    assert [s["toolCallId"] for s in sources] == ["c1"] and sources[0]["sources"][0]["fileName"] == "备份.md"
    tool = fake_model.requests[0]["tools"][0]["function"]
    assert tool["name"] == "my_knowledge" and '"My notes"' in tool["description"]
    sent = fake_model.requests[1]["messages"][-1]
    assert sent["role"] == "tool" and "数据库每天凌晨备份一次" in sent["content"]
    detail = user.ok("GET", f"/api/agent-sessions/{res.session_id}")
    assert detail["knowledge"] == [{"id": kb, "name": "My notes"}]
    assert {"type": "data-knowledge-sources", "data": sources[0]} in detail["messages"][1]["parts"]


def test_the_set_is_kept_through_turns_and_a_regeneration_until_replaced(
    user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    first = indexed(user, *NOTES, name="First")
    second = indexed(user, NOTES[0], name="Second")
    fake_model.default = lambda body: text("ok")
    sid = llm_chat(user, "hello", knowledgeIds=[first, first]).session_id
    assert llm_chat(user, "again", sessionId=sid).status == 200
    assert post_stream(user, f"/api/agent-sessions/{sid}/regenerate", {}).status == 200
    assert [tool_names(r) for r in fake_model.requests] == [["my_knowledge"]] * 3
    assert [k["id"] for k in user.ok("GET", f"/api/agent-sessions/{sid}")["knowledge"]] == [first]
    llm_chat(user, "other", sessionId=sid, knowledgeIds=[second, first])
    assert '"Second", "First"' in fake_model.requests[-1]["tools"][0]["function"]["description"]
    llm_chat(user, "none", sessionId=sid, knowledgeIds=[])
    assert tool_names(fake_model.requests[-1]) == []
    assert user.ok("GET", f"/api/agent-sessions/{sid}")["knowledge"] == []


def test_another_users_or_a_missing_collection_is_refused_before_anything_is_written(
    user: ApiClient, make_user: Callable[..., ApiClient], model_id: int, fake_model: FakeModel
) -> None:
    bob = make_user("bob")
    theirs = indexed(bob, NOTES[0], name="Bob's")
    mine = indexed(user, NOTES[0])
    for ids in ([theirs], [mine, "kb_missing"]):
        res = llm_chat(user, "hello", knowledgeIds=ids)
        assert res.status == 404 and res.json()["error"]["code"] == "knowledge_not_found", res.body
    too_many = llm_chat(user, "hello", knowledgeIds=[mine, "kb_2", "kb_3", "kb_4", "kb_5", "kb_6"])
    assert too_many.status == 422 and "knowledgeIds" in too_many.json()["error"]["fieldCodes"], too_many.body
    assert user.ok("GET", "/api/agent-sessions")["total"] == 0 and fake_model.requests == []
    fake_model.default = lambda body: text("ok")
    sid = llm_chat(user, "hello", knowledgeIds=[mine]).session_id
    refused = llm_chat(user, "now bob's", sessionId=sid, knowledgeIds=[theirs])
    assert refused.status == 404
    assert [k["id"] for k in user.ok("GET", f"/api/agent-sessions/{sid}")["knowledge"]] == [mine]


def test_a_deleted_collection_drops_out_of_the_session(user: ApiClient, model_id: int, fake_model: FakeModel) -> None:
    kept, dropped = indexed(user, NOTES[0], name="Kept"), indexed(user, NOTES[1], name="Dropped")
    fake_model.default = lambda body: text("ok")
    sid = llm_chat(user, "hello", knowledgeIds=[dropped, kept]).session_id
    user.ok("DELETE", f"/api/knowledge/{dropped}", status=204)
    assert user.ok("GET", f"/api/agent-sessions/{sid}")["knowledge"] == [{"id": kept, "name": "Kept"}]
    llm_chat(user, "again", sessionId=sid)
    assert '"Dropped"' not in fake_model.requests[-1]["tools"][0]["function"]["description"]
    user.ok("DELETE", f"/api/knowledge/{kept}", status=204)
    llm_chat(user, "last", sessionId=sid)
    assert tool_names(fake_model.requests[-1]) == []


def test_beside_an_agents_tool_of_the_same_name(
    admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    agent = make_agent(admin, "helper", modelId=model_id)
    shared = indexed(admin, NOTES[1], name="Company")
    made = make_tool(admin, "my_knowledge", "knowledge", config={"collectionIds": [shared]})
    attach(admin, agent["id"], {"toolId": made["id"]})
    mine = indexed(user, NOTES[0], name="Mine")
    fake_model.push(call("my_knowledge_2", {"query": "signing key"}, id="c1"), text("Every ninety days."))
    res = post_stream(user, "/api/agents/helper/chat", {"message": "keys?", "knowledgeIds": [mine]})
    assert tool_names(fake_model.requests[0]) == ["my_knowledge", "my_knowledge_2"]
    (output,) = [c["output"] for c in res.of("tool-output-available") if c["toolCallId"] == "c1"]
    assert [r["fileName"] for r in output["data"]["results"]] == ["keys.md"]
