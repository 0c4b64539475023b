"""The document tool inside real chat runs (fake model over HTTP): memory written in one conversation is
read back in a new one, and a delete waits for the user's approval."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.chat.helpers import attach, chat, make_agent, make_tool, post_stream, session_status
from tests.documents.conftest import create_doc, user_id
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient, LiveApp


@pytest.fixture
def agent(admin: ApiClient, model_id: int) -> dict[str, Any]:
    agent = make_agent(admin, "keeper", modelId=model_id, maxSteps=5)
    tool = make_tool(admin, "docs", "document")
    attach(admin, agent["id"], {"toolId": tool["id"], "position": 0})
    return agent


def _tool_messages(request: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in request["messages"] if m["role"] == "tool"]


def test_memory_written_in_one_session_is_read_in_the_next(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(
        call("docs", {"action": "create", "title": "Drink preference", "content": "The user prefers 绿茶 (green tea).",
                      "sessionId": "as_forged"}, id="c1"),
        text("Noted."),
    )
    first = chat(user, "keeper", "Remember that I like green tea.")
    created = first.of("tool-output-available")[0]["output"]
    assert created["success"] is True and created["data"]["type"] == "memory"
    doc_id = created["data"]["id"]
    assert app.sql("SELECT user_id, session_id FROM agent_documents WHERE id = ?", (doc_id,)) == [
        (user_id(user), first.session_id)
    ]

    fake_model.push(call("docs", {"action": "read", "q": "绿茶"}, id="c2"), text("You like green tea."))
    second = chat(user, "keeper", "What do I like to drink?")
    assert second.session_id != first.session_id
    read = second.of("tool-output-available")[0]["output"]
    assert read["success"] is True and read["data"]["id"] == doc_id
    assert read["data"]["content"] == "The user prefers 绿茶 (green tea)."
    sent_back = json.dumps(_tool_messages(fake_model.requests[-1]), ensure_ascii=False)
    assert "The user prefers 绿茶" in sent_back  # the model saw the memory
    assert second.text == "You like green tea."
    assert user.ok("GET", f"/api/agent-documents/{doc_id}")["title"] == "Drink preference"


def test_delete_waits_for_approval_and_runs_only_when_approved(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    doc = create_doc(user, title="Old plan", content="obsolete")
    fake_model.push(call("docs", {"action": "delete", "id": doc["id"]}, id="d1"))
    paused = chat(user, "keeper", "Delete the old plan.")
    sid = paused.session_id
    assert [c["toolCallId"] for c in paused.of("tool-approval-request")] == ["d1"]
    assert not paused.of("tool-output-available")
    assert session_status(app, sid) == "awaiting_approval"
    assert user.ok("GET", f"/api/agent-documents/{doc['id']}")["title"] == "Old plan"

    fake_model.push(text("Deleted."))
    resumed = post_stream(user, f"/api/agent-sessions/{sid}/approvals", {"toolCallId": "d1", "approved": True})
    out = resumed.of("tool-output-available")[0]["output"]
    assert out["success"] is True and out["data"] == {"id": doc["id"], "deleted": True}
    assert user.get(f"/api/agent-documents/{doc['id']}").status_code == 404


def test_denied_delete_leaves_the_document_and_reads_never_wait(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    doc = create_doc(user, title="Keep me", content="important")
    fake_model.push(
        call("docs", {"action": "list"}, id="l1"),
        call("docs", {"action": "delete", "id": doc["id"]}, id="d2"),
    )
    paused = chat(user, "keeper", "Tidy up.")
    listed = paused.of("tool-output-available")[0]["output"]  # list ran at once, no approval
    assert listed["data"]["items"][0]["id"] == doc["id"]
    assert [c["toolCallId"] for c in paused.of("tool-approval-request")] == ["d2"]

    fake_model.push(text("Left it alone."))
    post_stream(user, f"/api/agent-sessions/{paused.session_id}/approvals", {"toolCallId": "d2", "approved": False})
    assert user.ok("GET", f"/api/agent-documents/{doc['id']}")["content"] == "important"
    assert session_status(app, paused.session_id) != "awaiting_approval"


def test_another_users_agent_run_cannot_reach_the_document(
    user: ApiClient, bob: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    doc = create_doc(user, title="Alice's", content="private")
    fake_model.push(call("docs", {"action": "read", "id": doc["id"]}, id="r1"), text("Nothing."))
    res = chat(bob, "keeper", "Read it.")
    errors = res.of("tool-output-error")
    assert errors and "document not found or no access" in errors[0]["errorText"]
