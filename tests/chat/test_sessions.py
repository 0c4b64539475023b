"""Session list, detail, rename, soft delete; another user's sessions do not exist for you."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel
from tests.support import ApiClient, LiveApp


def test_list_rename_delete_and_isolation(
    app: LiveApp, user: ApiClient, make_user: Any, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    a = chat(user, "helper", "first chat about apples").session_id
    b = chat(user, "helper", "second chat " + "x" * 200).session_id
    bob = make_user("bob")
    c = chat(bob, "helper", "bob's chat").session_id

    page = user.ok("GET", "/api/agent-sessions")
    assert [s["id"] for s in page["items"]] == [b, a]  # newest first, only mine
    assert page["total"] == 2 and page["page"] == 1 and page["pageSize"] == 20 and page["hasMore"] is False
    assert page["items"][1]["title"] == "first chat about apples"
    assert len(page["items"][0]["title"]) <= 60 and page["items"][0]["title"].endswith("…")
    assert page["items"][0]["agentSlug"] == "helper" and page["items"][0]["agentName"] == "Helper"
    small = user.ok("GET", "/api/agent-sessions?pageSize=1")
    assert small["hasMore"] is True and len(small["items"]) == 1
    assert user.ok("GET", "/api/agent-sessions?kind=llm")["total"] == 0
    chat(user, "helper", "more", session_id=a)
    assert [s["id"] for s in user.ok("GET", "/api/agent-sessions")["items"]] == [a, b]  # activity reorders

    renamed = user.ok("PATCH", f"/api/agent-sessions/{a}", json={"title": "  Apples  "})
    assert renamed["title"] == "Apples"
    assert user.patch(f"/api/agent-sessions/{a}", json={"title": ""}).status_code == 422

    for method, url, body in (
        ("GET", f"/api/agent-sessions/{c}", None),
        ("PATCH", f"/api/agent-sessions/{c}", {"title": "mine now"}),
        ("DELETE", f"/api/agent-sessions/{c}", None),
        ("GET", f"/api/agent-sessions/{c}/stream", None),
        ("POST", f"/api/agent-sessions/{c}/stop", None),
    ):
        assert user.request(method, url, json=body).status_code == 404, (method, url)
    hijack = user.post("/api/agents/helper/chat", json={"message": "hi", "sessionId": c})
    assert hijack.status_code == 404
    assert app.sql("SELECT count(*) FROM agent_messages WHERE session_id = ?", (c,)) == [(2,)]

    assert user.delete(f"/api/agent-sessions/{a}").status_code == 204
    assert [s["id"] for s in user.ok("GET", "/api/agent-sessions")["items"]] == [b]
    assert user.get(f"/api/agent-sessions/{a}").status_code == 404
    assert user.post("/api/agents/helper/chat", json={"message": "x", "sessionId": a}).status_code == 404
    assert app.sql("SELECT deleted_at IS NOT NULL FROM agent_sessions WHERE id = ?", (a,)) == [(1,)]
    assert bob.ok("GET", f"/api/agent-sessions/{c}")["id"] == c


def test_session_of_another_agent_cannot_be_continued_elsewhere(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], model_id: int, fake_model: FakeModel
) -> None:
    from tests.chat.helpers import make_agent

    make_agent(admin, "other", modelId=model_id)
    sid = chat(user, "helper", "hello").session_id
    res = user.post("/api/agents/other/chat", json={"message": "x", "sessionId": sid})
    assert res.status_code == 409 and res.json()["error"]["code"] == "session_mismatch"
    res = user.post("/api/llm/chat", json={"message": "x", "sessionId": sid})
    assert res.status_code == 409
