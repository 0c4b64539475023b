"""U+0000 from a model or a tool is saved as U+FFFD (``core.db.storable``): PostgreSQL's text cannot hold it,
and a reply must read back the same on SQLite as on PostgreSQL. From a user it is refused (a 422 naming
the field), as everywhere else in the API: they can send it again without it."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import attach, chat, checkpoint_mid_stream, make_tool, post_stream, reply_row, session_status
from tests.chat.test_titles_and_search import title_step
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.support import ApiClient, LiveApp

NUL, STANDIN = "\x00", "\ufffd"


def _wire(admin: ApiClient, agent: dict[str, Any], slug: str, type_: str, **link: Any) -> None:
    tool = make_tool(admin, slug, type_)
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0, **link})


def test_a_reply_and_tool_call_holding_nul_are_saved(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    _wire(admin, agent, "echo", "test-echo")
    fake_model.push(Step(text=f"Before{NUL}.", tool_calls=[ToolCall("echo", {"text": f"x{NUL}y"}, id="n1")]),
                    text(f"After{NUL}end."))
    res = chat(user, "helper", "say it")
    assert "error" not in res.types and res.types[-1] == "[DONE]", res.body
    assert res.text == f"Before{NUL}.After{NUL}end."  # the live stream carries what the model sent

    detail = user.ok("GET", f"/api/agent-sessions/{res.session_id}")
    _question, reply = detail["messages"]
    assert reply["status"] == "complete" and reply["error"] is None
    assert reply["content"] == f"Before{STANDIN}.\n\nAfter{STANDIN}end."
    tool = next(p for p in reply["parts"] if p.get("toolCallId") == "n1")
    assert tool["input"] == {"text": f"x{STANDIN}y"}
    assert tool["output"]["data"]["echo"] == f"x{STANDIN}y"
    assert session_status(app, res.session_id) == "idle"
    # the model history keeps what the model saw: the next turn sends it back unchanged
    fake_model.push(text("ok"))
    assert chat(user, "helper", "again", session_id=res.session_id).text == "ok"
    said = [m for m in fake_model.requests[-1]["messages"] if m["role"] == "tool"]
    assert '"echo":"x\\u0000y"' in said[0]["content"]  # the tool's JSON output, as the model first got it


def test_an_approval_holding_nul_is_saved_and_answered(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel, test_tools: None,
) -> None:
    _wire(admin, agent, "guard", "test-guarded", needsApproval=True)
    fake_model.push(Step(tool_calls=[ToolCall("guard", {"action": f"wipe{NUL}", f"note{NUL}": NUL}, id="g1")]))
    res = chat(user, "helper", "please act")
    assert res.of("tool-approval-request") and "error" not in res.types, res.body
    pending = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["pendingApprovals"]
    assert pending[0]["input"] == {"action": f"wipe{STANDIN}", f"note{STANDIN}": STANDIN}
    fake_model.push(text("fine"))
    resumed = post_stream(user, f"/api/agent-sessions/{res.session_id}/approvals",
                          {"toolCallId": "g1", "approved": False, "reason": "nope"})
    assert resumed.text == "fine" and "error" not in resumed.types, resumed.body
    reply = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][-1]
    part = next(p for p in reply["parts"] if p.get("toolCallId") == "g1")
    assert part["approval"]["reason"] == "nope"


def test_a_checkpoint_holding_nul_is_saved(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    words = [f"w{i}{NUL}" for i in range(40)]
    fake_model.push(Step(text=" ".join(words), delay=0.1))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "tell me"}) as resp:
        session_id = resp.headers["x-session-id"]
        (status, content), lines = checkpoint_mid_stream(app, resp)
        assert status == "streaming" and content.startswith(f"w0{STANDIN} w1{STANDIN} "), content
        for _ in lines:
            pass
    assert reply_row(app, session_id) == ("complete", " ".join(words).replace(NUL, STANDIN))


def test_a_generated_title_holding_nul_is_saved(
    admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"generateTitles": True})
    fake_model.push(text("Sure."), title_step(f"Nul{NUL}title"))
    sid = chat(user, "helper", "hello").session_id
    named = user.ok("POST", f"/api/agent-sessions/{sid}/title")
    assert (named["title"], named["titleSource"]) == (f"Nul{STANDIN}title", "generated")


def test_a_reply_holding_a_lone_surrogate_is_saved(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    """A model cut off between the two halves of an emoji sends half a UTF-16 pair (JSON ``"\\ud83d"``);
    it cannot be encoded as UTF-8, and the reply was lost (neither streamed nor saved). It arrives, and is
    stored, as U+FFFD."""
    fake_model.push(Step(text="cut\ud83d off, \udfff", chunks=2))
    res = chat(user, "helper", "hi")
    assert "error" not in res.types and res.types[-1] == "[DONE]", res.body
    assert res.text == f"cut{STANDIN} off, {STANDIN}"
    reply = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][-1]
    assert (reply["status"], reply["content"]) == ("complete", f"cut{STANDIN} off, {STANDIN}")
    assert session_status(app, res.session_id) == "idle"


def _refused(response: Any, field: str) -> None:
    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "validation_error" and field in error["fields"], error


def test_nul_or_a_lone_surrogate_from_the_user_is_refused(
    app: LiveApp, user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    """The message, a session's new title, an approval's reason: a 422 naming the field, nothing written,
    on both databases (it was stored as U+FFFD, the user's text changed without a word)."""
    headers = {"content-type": "application/json"}
    for bad in (f"say{NUL}it", "say\\udfffit"):
        body = f'{{"message": "{bad}"}}'.replace(NUL, "\\u0000").encode()
        _refused(user.post("/api/agents/helper/chat", content=body, headers=headers), "message")
    assert app.sql("SELECT count(*) FROM agent_messages") == [(0,)] and fake_model.requests == []

    _wire(admin, agent, "guard", "test-guarded", needsApproval=True)
    fake_model.push(Step(tool_calls=[ToolCall("guard", {"action": "wipe"}, id="g1")]))
    sid = chat(user, "helper", "please act").session_id
    _refused(user.patch(f"/api/agent-sessions/{sid}", json={"title": f"new{NUL}"}), "title")
    answer = {"toolCallId": "g1", "approved": False, "reason": f"no{NUL}pe"}
    _refused(user.post(f"/api/agent-sessions/{sid}/approvals", json=answer), "reason")
    assert user.ok("GET", f"/api/agent-sessions/{sid}")["pendingApprovals"][0]["toolCallId"] == "g1"
    assert user.ok("GET", f"/api/agent-sessions/{sid}")["title"] == "please act"
