"""Approvals by someone else (``chat.approvals``): a tool's approver groups answer its paused calls, the
requester may not, outsiders learn nothing, the inbox lists exactly what the caller may decide, and the
approver's answer resumes the requester's turn (fake model over HTTP)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.audit.test_events import of_type
from tests.chat.helpers import attach, chat, make_tool, session_status, wait_for
from tests.fakes.openai_server import FakeModel, Step, ToolCall, text
from tests.support import ApiClient, LiveApp


def _group(admin: ApiClient, name: str, *members: ApiClient) -> int:
    group = admin.ok("POST", "/api/admin/groups", json={"name": name})["id"]
    admin.ok("PUT", f"/api/admin/groups/{group}/members", json=[m.ok("GET", "/api/auth/me")["id"] for m in members])
    return group


def _pause(client: ApiClient, fake_model: FakeModel, call_id: str = "ap1") -> str:
    fake_model.push(Step(text="Let me delete it.", tool_calls=[ToolCall("guard", {"action": "drop"}, id=call_id)]))
    res = chat(client, "helper", "please drop the table")
    assert [c["toolCallId"] for c in res.of("tool-approval-request")] == [call_id]
    return res.session_id


def _answer(client: ApiClient, sid: str, approved: bool = True, **extra: Any) -> Any:
    return client.post(f"/api/agent-sessions/{sid}/approvals", json={"toolCallId": "ap1", "approved": approved,
                                                                    **extra})


def _wire(admin: ApiClient, agent: dict[str, Any], **fields: Any) -> dict[str, Any]:
    tool = make_tool(admin, "guard", "test-guarded", needsApproval=True, **fields)
    attach(admin, agent["id"], {"toolId": tool["id"]})
    return tool


def test_an_approver_answers_and_the_requesters_turn_resumes(
    app: LiveApp, admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    alice, bob, mallory = make_user("alice"), make_user("bob"), make_user("mallory")
    reviewers = _group(admin, "reviewers", alice, bob)  # the requester in the group still may not approve
    tool = _wire(admin, agent, approverGroupIds=[reviewers])
    assert admin.ok("GET", f"/api/agent-tools/{tool['id']}")["approverGroupIds"] == [reviewers]
    sid = _pause(alice, fake_model)
    pending = alice.ok("GET", f"/api/agent-sessions/{sid}")["pendingApprovals"]
    assert pending[0]["approverGroups"] == [{"id": reviewers, "name": "reviewers"}]

    refused = _answer(alice, sid)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "approval_by_approvers"
    assert "reviewers" in refused.json()["error"]["message"]
    for outsider_answer in (_answer(mallory, sid), mallory.post(f"/api/agent-sessions/{sid}/approvals",
                                                                 json={"toolCallId": "nope", "approved": True})):
        assert outsider_answer.status_code == 404
        assert outsider_answer.json()["error"]["code"] == "session_not_found"
    assert mallory.ok("GET", "/api/approvals")["items"] == []
    assert alice.ok("GET", "/api/approvals")["items"] == []  # never her own calls
    assert bob.get(f"/api/agent-sessions/{sid}").status_code == 404  # the session stays alice's

    inbox = bob.ok("GET", "/api/approvals")
    assert inbox["total"] == 1
    [item] = inbox["items"]
    assert (item["sessionId"], item["toolCallId"], item["toolSlug"], item["input"]) == (
        sid, "ap1", "guard", {"action": "drop"})
    assert item["requester"]["name"] == "alice" and item["agent"]["name"] == agent["name"]
    assert item["context"] == {"userMessage": "please drop the table", "assistantText": "Let me delete it."}
    assert item["approverGroups"] == [{"id": reviewers, "name": "reviewers"}] and item["sessionTitle"]

    deleting = admin.delete(f"/api/admin/groups/{reviewers}")
    assert deleting.status_code == 409 and deleting.json()["error"]["code"] == "group_in_use"

    fake_model.push(text("Dropped it."))
    answered = _answer(bob, sid, approved=True)
    assert answered.status_code == 200
    assert answered.json() == {"toolCallId": "ap1", "approved": True, "resumed": True}
    wait_for(lambda: session_status(app, sid) == "idle")
    reply = alice.ok("GET", f"/api/agent-sessions/{sid}")["messages"][-1]
    assert reply["status"] == "complete" and reply["content"].endswith("Dropped it.")
    part = next(p for p in reply["parts"] if p.get("toolCallId") == "ap1")
    assert part["state"] == "output-available" and part["approval"]["decidedBy"] == "bob"
    assert part["output"]["data"] == {"did": "drop", "approved": True}
    assert bob.ok("GET", "/api/approvals")["items"] == []

    [event] = of_type(admin, "tool.approval")
    assert (event["actorName"], event["detail"]["decision"]) == ("bob", "approved")
    assert event["detail"]["requesterId"] == alice.ok("GET", "/api/auth/me")["id"]


def test_a_rejection_by_an_approver_reaches_the_model_with_its_reason(
    app: LiveApp, admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    _wire(admin, agent, approverGroupIds=[_group(admin, "reviewers", bob)])
    sid = _pause(alice, fake_model)
    fake_model.push(text("Understood."))
    assert _answer(bob, sid, approved=False, reason="not in production").json()["resumed"] is True
    wait_for(lambda: session_status(app, sid) == "idle")
    denied = str(fake_model.requests[-1])
    assert "not in production" in denied
    [event] = of_type(admin, "tool.approval")
    assert (event["actorName"], event["detail"]["decision"], event["detail"]["reason"]) == (
        "bob", "rejected", "not in production")


def test_hidden_tools_go_only_to_the_approvers_who_may_see_them(
    admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    boss, other_admin = make_user("boss", role="admin"), make_user("ops", role="admin")
    bob = make_user("bob")
    reviewers = _group(admin, "reviewers", bob, boss)
    tool = _wire(admin, agent, approverGroupIds=[reviewers], adminOnly=True)
    sid = _pause(boss, fake_model)
    assert _answer(boss, sid).status_code == 403  # an admin may not approve their own call either
    assert bob.ok("GET", "/api/approvals")["items"] == []  # never sees the admin-only tool's name
    assert _answer(bob, sid).status_code == 404
    assert [i["sessionId"] for i in other_admin.ok("GET", "/api/approvals")["items"]] == [sid]
    fake_model.push(text("done"))
    assert _answer(other_admin, sid).json()["resumed"] is True  # an admin outside the groups may decide

    # limited to a team: an approver outside it is not told; one inside may decide
    carol, dave = make_user("carol"), make_user("dave")
    team = _group(admin, "team", carol, dave)
    admin.ok("PUT", f"/api/admin/groups/{reviewers}/members",
             json=[c.ok("GET", "/api/auth/me")["id"] for c in (bob, carol)])
    admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"adminOnly": False, "groupIds": [team]})
    sid2 = _pause(dave, fake_model)
    assert bob.ok("GET", "/api/approvals")["items"] == []
    assert _answer(bob, sid2).status_code == 404
    assert [i["sessionId"] for i in carol.ok("GET", "/api/approvals")["items"]] == [sid2]
    fake_model.push(text("ok"))
    assert _answer(carol, sid2).json()["resumed"] is True


def test_without_approvers_only_the_requester_answers(
    admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    tool = _wire(admin, agent)
    assert tool["approverGroupIds"] == []
    bad = admin.put(f"/api/agent-tools/{tool['id']}", json={"approverGroupIds": [999]})
    assert bad.status_code == 422 and "approverGroupIds" in bad.json()["error"]["fields"]
    sid = _pause(alice, fake_model)
    assert alice.ok("GET", f"/api/agent-sessions/{sid}")["pendingApprovals"][0]["approverGroups"] == []
    assert _answer(bob, sid).status_code == 404 and admin.ok("GET", "/api/approvals")["items"] == []
    fake_model.push(text("fine"))
    assert _answer(alice, sid).status_code == 200


def test_a_call_whose_requester_left_the_agents_groups_leaves_the_inbox_until_they_rejoin(
    admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any], fake_model: FakeModel,
    test_tools: None,
) -> None:
    alice, bob = make_user("alice"), make_user("bob")
    _wire(admin, agent, approverGroupIds=[_group(admin, "reviewers", bob)])
    team = _group(admin, "team", alice)
    admin.ok("PUT", f"/api/admin/agents/{agent['id']}", json={"groupIds": [team]})
    sid = _pause(alice, fake_model)
    assert [i["sessionId"] for i in bob.ok("GET", "/api/approvals")["items"]] == [sid]
    admin.ok("PUT", f"/api/admin/groups/{team}/members", json=[])  # alice leaves: her run cannot resume
    left = bob.ok("GET", "/api/approvals")
    assert (left["items"], left["total"]) == ([], 0)
    assert [i["sessionId"] for i in admin.ok("GET", "/api/approvals")["items"]] == []
    assert _answer(bob, sid).status_code == 404
    admin.ok("PUT", f"/api/admin/groups/{team}/members", json=[alice.ok("GET", "/api/auth/me")["id"]])
    assert [i["sessionId"] for i in bob.ok("GET", "/api/approvals")["items"]] == [sid]
    fake_model.push(text("done"))
    assert _answer(bob, sid).json()["resumed"] is True
