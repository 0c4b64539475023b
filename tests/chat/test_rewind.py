"""Regenerate, retry and edit-and-resend (issue 14 point 2): the conversation is cut after the chosen user
message (messages, their approvals and the model history), the turn runs again, and what the removed
replies did elsewhere stays done."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import attach, chat, make_tool, post_stream, wait_for
from tests.fakes.openai_server import FakeModel, Step, call, text
from tests.support import ApiClient, LiveApp


def _said(request: dict[str, Any]) -> list[tuple[str, str]]:
    """What the model was sent, as (role, text) pairs without the system prompt."""
    out = []
    for m in request["messages"]:
        if m["role"] in ("user", "assistant") and isinstance(m.get("content"), str):
            out.append((m["role"], m["content"]))
    return out


def _messages(client: ApiClient, session_id: str) -> list[tuple[str, str, str]]:
    detail = client.ok("GET", f"/api/agent-sessions/{session_id}")
    return [(m["role"], m["content"], m["status"]) for m in detail["messages"]]


def test_regenerate_replaces_the_last_reply_and_the_model_forgets_it(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("first answer"), text("second answer"))
    sid = chat(user, "helper", "hello").session_id
    assert sid
    res = post_stream(user, f"/api/agent-sessions/{sid}/regenerate", {})
    assert res.status == 200 and res.text == "second answer"
    assert _said(fake_model.requests[-1]) == [("user", "hello")]  # the replaced reply is gone for the model
    assert _messages(user, sid) == [("user", "hello", "complete"), ("assistant", "second answer", "complete")]
    # The next message continues from the new history, not the replaced one.
    fake_model.push(text("third"))
    chat(user, "helper", "and now?", sid)
    assert _said(fake_model.requests[-1]) == [("user", "hello"), ("assistant", "second answer"),
                                              ("user", "and now?")]


def test_a_failed_reply_is_retried(user: ApiClient, agent: dict[str, Any], fake_model: FakeModel) -> None:
    fake_model.push(Step(error_status=400, error_message="bad request"), text("it works now"))
    sid = chat(user, "helper", "try").session_id
    assert _messages(user, sid)[-1][2] == "failed"
    res = post_stream(user, f"/api/agent-sessions/{sid}/regenerate", {})
    assert res.text == "it works now"
    assert _messages(user, sid) == [("user", "try", "complete"), ("assistant", "it works now", "complete")]


def test_edit_an_earlier_message_cuts_everything_after_it(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("A1"), text("A2"), text("A3"), text("B2"))
    sid = chat(user, "helper", "Q1").session_id
    chat(user, "helper", "Q2", sid)
    chat(user, "helper", "Q3", sid)
    detail = user.ok("GET", f"/api/agent-sessions/{sid}")
    q2 = detail["messages"][2]
    assert q2["content"] == "Q2"
    res = post_stream(user, f"/api/agent-sessions/{sid}/messages/{q2['id']}/resend", {"message": "Q2, edited"})
    assert res.status == 200 and res.text == "B2"
    assert _said(fake_model.requests[-1]) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q2, edited")]
    assert _messages(user, sid) == [
        ("user", "Q1", "complete"), ("assistant", "A1", "complete"),
        ("user", "Q2, edited", "complete"), ("assistant", "B2", "complete"),
    ]
    after = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"]
    assert after[2]["id"] == q2["id"] and after[2]["parts"] == [{"type": "text", "text": "Q2, edited"}]
    # Resending unchanged (no "message") runs the turn again with the text it has.
    fake_model.push(text("B2 again"))
    res = post_stream(user, f"/api/agent-sessions/{sid}/messages/{after[0]['id']}/resend", {})
    assert res.text == "B2 again" and _said(fake_model.requests[-1]) == [("user", "Q1")]
    assert [m[1] for m in _messages(user, sid)] == ["Q1", "B2 again"]


def test_a_message_from_before_the_history_marker_is_cut_by_counting_prompts(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("A1"), text("A2"), text("B2"))
    sid = chat(user, "helper", "Q1").session_id
    chat(user, "helper", "Q2", sid)
    app.sql("UPDATE agent_messages SET history_length = NULL WHERE session_id = ?", (sid,))
    q2 = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"][2]
    res = post_stream(user, f"/api/agent-sessions/{sid}/messages/{q2['id']}/resend", {"message": "Q2b"})
    assert res.text == "B2"
    assert _said(fake_model.requests[-1]) == [("user", "Q1"), ("assistant", "A1"), ("user", "Q2b")]


def test_refused_while_a_reply_runs_or_an_approval_waits_and_for_strangers(
    app: LiveApp, user: ApiClient, admin: ApiClient, make_user: Any, agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    fake_model.push(text("A1"), Step(text="slow", first_delay=5))
    sid = chat(user, "helper", "Q1").session_id
    first = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"][0]
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "Q2", "sessionId": sid}) as running:
        assert running.status_code == 200
        for url, body in ((f"/api/agent-sessions/{sid}/regenerate", {}),
                          (f"/api/agent-sessions/{sid}/messages/{first['id']}/resend", {"message": "x"})):
            r = user.post(url, json=body)
            assert r.status_code == 409 and r.json()["error"]["code"] == "session_busy", r.text
        # stop only once the model has the slow step: stopped before, the step stays queued for the next
        # turn, which then answers text instead of asking for approval
        wait_for(lambda: fake_model.pending() == 0)
        user.ok("POST", f"/api/agent-sessions/{sid}/stop")
    wait_for(lambda: app.sql("SELECT status FROM agent_sessions WHERE id=?", (sid,))[0][0] == "idle")

    # waiting for an approval
    tool = make_tool(admin, "guard", "test-guarded")
    attach(admin, agent["id"], {"toolId": tool["id"]})
    fake_model.push(call("guard", {"action": "delete"}))
    chat(user, "helper", "delete it", sid)
    r = user.post(f"/api/agent-sessions/{sid}/regenerate", json={})
    assert r.status_code == 409 and r.json()["error"]["code"] == "approval_pending"

    other = make_user()
    r = other.post(f"/api/agent-sessions/{sid}/regenerate", json={})
    assert r.status_code == 404 and r.json()["error"]["code"] == "session_not_found"
    reply_id = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"][1]["id"]
    r = user.post(f"/api/agent-sessions/{sid}/messages/{reply_id}/resend", json={"message": "x"})
    assert r.status_code == 404 and r.json()["error"]["code"] == "message_not_found"
    r = user.post(f"/api/agent-sessions/{sid}/messages/{first['id']}/resend", json={"message": "  "})
    assert r.status_code == 422


def test_what_a_replaced_reply_did_stays_done_and_its_approvals_go(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    tool = make_tool(admin, "notes", "document")
    attach(admin, agent["id"], {"toolId": tool["id"]})
    fake_model.push(call("notes", {"action": "create", "title": "Plan", "content": "step one"}),
                    text("Saved it."), text("Not saving this time."))
    first = chat(user, "helper", "write it down")
    sid = first.session_id
    output = first.of("tool-output-available")[0]["output"]  # the card links to the document it wrote
    assert output["metadata"]["link"] == f"/agent-documents/{output['data']['id']}"
    docs = user.ok("GET", "/api/agent-documents?type=memory")["items"]
    assert [d["title"] for d in docs] == ["Plan"]
    post_stream(user, f"/api/agent-sessions/{sid}/regenerate", {})
    assert [d["title"] for d in user.ok("GET", "/api/agent-documents?type=memory")["items"]] == ["Plan"]
    assert _messages(user, sid)[-1][1] == "Not saving this time."
    assert app.sql("SELECT count(*) FROM chat_approvals WHERE session_id = ?", (sid,)) == [(0,)]


def test_replies_carry_time_model_and_usage(user: ApiClient, agent: dict[str, Any], fake_model: FakeModel) -> None:
    fake_model.push(text("hi", input_tokens=12, output_tokens=3))
    sid = chat(user, "helper", "hello").session_id
    reply = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"][1]
    assert reply["modelName"] == "Fake" and reply["modelId"]
    assert (reply["inputTokens"], reply["outputTokens"]) == (12, 3)
    assert reply["createdAt"] and reply["updatedAt"]
