"""Budgets (issue 33, point 2): the admin API, refusing a turn before it starts (429 ``budget_exceeded``
with the budget and its reset, ``Retry-After``), stopping a running turn between its model calls, and what
the user sees is left."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.chat.helpers import chat, session_status
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient, LiveApp
from tests.usage.conftest import IN_PRICE, OUT_PRICE


def alice_id(app: LiveApp) -> int:
    return int(app.sql("SELECT id FROM users WHERE username = 'alice'")[0][0])


def midnight() -> datetime:
    return datetime.combine(datetime.now(UTC).date() + timedelta(days=1), datetime.min.time(), tzinfo=UTC)


def next_month() -> datetime:
    first = (datetime.now(UTC).date().replace(day=28) + timedelta(days=4)).replace(day=1)
    return datetime.combine(first, datetime.min.time(), tzinfo=UTC)


def test_the_budgets_api_creates_reads_replaces_and_deletes(app: LiveApp, admin: ApiClient, user: ApiClient) -> None:
    body = {"scope": "user", "scopeId": alice_id(app), "period": "day", "maxTokens": 1000, "maxCost": None}
    made = admin.ok("POST", "/api/admin/budgets", json=body)
    assert {k: made[k] for k in body} == body and made["id"]
    assert admin.ok("GET", f"/api/admin/budgets/{made['id']}")["maxTokens"] == 1000
    everyone = {"scope": "everyone", "scopeId": None, "period": "month", "maxTokens": None, "maxCost": 2.5}
    replaced = admin.ok("PUT", f"/api/admin/budgets/{made['id']}", json=everyone)
    assert {k: replaced[k] for k in everyone} == everyone
    assert [b["id"] for b in admin.ok("GET", "/api/admin/budgets")["items"]] == [made["id"]]
    admin.ok("DELETE", f"/api/admin/budgets/{made['id']}")
    gone = admin.get(f"/api/admin/budgets/{made['id']}")
    assert gone.status_code == 404 and gone.json()["error"]["code"] == "budget_not_found"
    assert user.post("/api/admin/budgets", json=everyone).status_code == 403


def test_bad_budgets_are_refused_with_the_field_named(app: LiveApp, admin: ApiClient) -> None:
    cases = [
        ({"scope": "everyone", "period": "day"}, "maxTokens", "budget_needs_limit"),
        ({"scope": "user", "period": "day", "maxTokens": 5}, "scopeId", "missing"),
        ({"scope": "user", "scopeId": 999, "period": "day", "maxTokens": 5}, "scopeId", "no_such_user"),
        ({"scope": "everyone", "scopeId": 1, "period": "day", "maxTokens": 5}, "scopeId", "no_scope_for_everyone"),
        ({"scope": "everyone", "period": "week", "maxTokens": 5}, "period", "literal_error"),
        ({"scope": "everyone", "period": "day", "maxTokens": 0}, "maxTokens", "greater_than_equal"),
        ({"scope": "everyone", "period": "day", "maxCost": -1}, "maxCost", "greater_than"),
    ]
    for body, field, code in cases:
        got = admin.post("/api/admin/budgets", json=body)
        assert got.status_code == 422, (body, got.text)
        assert got.json()["error"]["fieldCodes"][field]["code"] == code, (body, got.text)
    assert admin.ok("GET", "/api/admin/budgets")["items"] == []


def test_a_user_over_budget_is_refused_before_the_turn_with_429(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice_id(app), "period": "day",
                                                 "maxTokens": 15})
    fake_model.push(text("first", input_tokens=10, output_tokens=5), text("never", input_tokens=1))
    sid = chat(user, "helper", "one").session_id
    messages = app.sql("SELECT count(*) FROM agent_messages")[0][0]
    refused = user.post("/api/agents/helper/chat", json={"message": "two", "sessionId": sid})
    assert refused.status_code == 429
    error = refused.json()["error"]
    assert error["code"] == "budget_exceeded"
    assert "day budget of 15 tokens" in error["message"]
    assert midnight().strftime("%Y-%m-%d 00:00 UTC") in error["message"]
    assert error["fieldCodes"]["budget"]["params"]["variant"] == "day_tokens"
    assert error["fieldCodes"]["budget"]["params"]["limit"] == 15
    retry = int(refused.headers["retry-after"])
    assert 0 < retry <= (midnight() - datetime.now(UTC)).total_seconds() + 1
    assert app.sql("SELECT count(*) FROM agent_messages")[0][0] == messages  # nothing written
    assert session_status(app, sid or "") == "idle"
    new = user.post("/api/agents/helper/chat", json={"message": "a new chat"})
    assert new.status_code == 429
    assert app.sql("SELECT count(*) FROM agent_sessions")[0][0] == 1
    regen = user.post(f"/api/agent-sessions/{sid}/regenerate")
    assert regen.status_code == 429 and regen.json()["error"]["code"] == "budget_exceeded"
    trail = admin.ok("GET", "/api/admin/audit", params={"type": "budget.refused"})["items"]
    assert [(e["actorId"], e["detail"]["period"], e["detail"]["maxTokens"], e["detail"]["during"]) for e in trail] == [
        (alice_id(app), "day", 15, "start")] * 3  # the follow-up, the new chat and the regeneration
    # another user, whom the budget does not name, chats on
    assert chat(admin, "helper", "mine").status == 200


def test_a_running_turn_stops_between_its_model_calls_once_the_budget_is_used_up(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    budget = admin.ok("POST", "/api/admin/budgets", json={"scope": "everyone", "period": "month", "maxTokens": 25})
    fake_model.push(call("echo", {"text": "hi"}, input_tokens=20, output_tokens=10),
                    text("never asked", input_tokens=1, output_tokens=1))
    reply = chat(user, "helper", "use the tool")
    assert len(fake_model.requests) == 1, "the second call was never made"
    assert reply.of("tool-output-available"), "the first call's tool ran"
    [failure] = [c for c in reply.of("data-error")]
    assert failure["data"]["code"] == "budget_exceeded" and failure["data"]["variant"] == "month_tokens"
    assert "month budget of 25 tokens" in reply.of("error")[0]["errorText"]
    row = app.sql("SELECT status, input_tokens, output_tokens FROM agent_messages WHERE role = 'assistant'")
    assert row == [("failed", 20, 10)]
    assert app.sql("SELECT input_tokens, output_tokens FROM usage_records") == [(20, 10)]
    assert session_status(app, reply.session_id or "") == "idle"
    # on the trail like a refusal before a turn, after the tool call it followed, with what had been used
    trail = admin.ok("GET", "/api/admin/audit")["items"]
    assert [e["type"] for e in trail[:2]] == ["budget.refused", "tool.call"]
    refusal = trail[0]
    assert (refusal["actorId"], refusal["target"]) == (alice_id(app), f"budget:{budget['id']}")
    assert refusal["detail"] == {
        "budgetId": budget["id"], "scope": "everyone", "scopeId": None, "period": "month", "maxTokens": 25,
        "maxCost": None, "usedTokens": 30, "usedCost": pytest.approx((20 * IN_PRICE + 10 * OUT_PRICE) / 1e6),
        "resetsAt": next_month().isoformat(), "during": "turn", "sessionId": reply.session_id}
    assert admin.ok("GET", "/api/admin/audit", params={"type": "budget.refused"})["items"] == [refusal]


def test_a_cost_budget_counts_the_priced_tokens(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    # 1,000,000 input tokens at 0.5 USD: one turn of 10 input and 5 output tokens costs 0.0000125
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice_id(app), "period": "day",
                                                 "maxCost": 0.00001})
    fake_model.push(text("first", input_tokens=10, output_tokens=5))
    chat(user, "helper", "one")
    refused = user.post("/api/agents/helper/chat", json={"message": "two"})
    assert refused.status_code == 429
    assert refused.json()["error"]["fieldCodes"]["budget"]["params"]["variant"] == "day_cost"


def test_the_user_sees_what_is_left_of_each_budget(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    mine = admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice_id(app),
                                                        "period": "day", "maxTokens": 100})
    everyone = admin.ok("POST", "/api/admin/budgets", json={"scope": "everyone", "period": "month",
                                                            "maxCost": 1.0})
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": 1, "period": "day", "maxTokens": 1})
    fake_model.push(text("first", input_tokens=10, output_tokens=5))
    chat(user, "helper", "one")
    items = {b["id"]: b for b in user.ok("GET", "/api/usage/budgets")["items"]}
    assert set(items) == {mine["id"], everyone["id"]}, "the admin's own budget is not alice's"
    day = items[mine["id"]]
    assert (day["usedTokens"], day["leftTokens"], day["leftCost"]) == (15, 85, None)
    assert datetime.fromisoformat(day["resetsAt"]) == midnight()
    month = items[everyone["id"]]
    assert month["leftTokens"] is None and abs(month["leftCost"] - (1.0 - 0.0000125)) < 1e-9
    now = datetime.now(UTC).date()
    first_next = (now.replace(day=28) + timedelta(days=4)).replace(day=1)
    assert datetime.fromisoformat(month["resetsAt"]).date() == first_next


def test_a_group_budget_holds_for_each_member_and_the_report_groups_by_group(
    app: LiveApp, admin: ApiClient, user: ApiClient, make_user: Any, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    bob = make_user("bob")
    now = app.stamp(datetime.now(UTC))
    app.sql("INSERT INTO groups (name, description, source, created_at, updated_at) VALUES ('team', '', 'local', ?, ?)",
            (now, now))
    group = app.sql("SELECT id FROM groups WHERE name = 'team'")[0][0]
    app.sql("INSERT INTO group_members (group_id, user_id, created_at) VALUES (?, ?, ?)", (group, alice_id(app), now))
    made = admin.ok("POST", "/api/admin/budgets", json={"scope": "group", "scopeId": group, "period": "day",
                                                        "maxTokens": 15})
    assert admin.post("/api/admin/budgets", json={"scope": "group", "scopeId": 999, "period": "day",
                                                  "maxTokens": 1}).json()["error"]["fieldCodes"]["scopeId"] == {
        "code": "no_such_group"}
    fake_model.push(text("first", input_tokens=10, output_tokens=5), text("bob's", input_tokens=10, output_tokens=5),
                    text("bob's again", input_tokens=10, output_tokens=5))
    chat(user, "helper", "one")
    refused = user.post("/api/agents/helper/chat", json={"message": "two"})
    assert refused.status_code == 429
    assert "your group's day budget of 15 tokens" in refused.json()["error"]["message"]
    assert [b["id"] for b in user.ok("GET", "/api/usage/budgets")["items"]] == [made["id"]]
    chat(bob, "helper", "not in the group")
    assert chat(bob, "helper", "still not").status == 200
    by_group = admin.ok("GET", "/api/admin/usage?groupBy=group")["items"]
    assert [(i["key"], i["label"], i["inputTokens"]) for i in by_group] == [(str(group), "team", 10)]


def test_a_budget_first_read_by_a_refused_turn_still_refuses_the_next(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    # set after the usage it refuses: the refused turn is the first to read it, and rolls back
    fake_model.push(text("first", input_tokens=10, output_tokens=5))
    chat(user, "helper", "one")
    admin.ok("POST", "/api/admin/budgets", json={"scope": "user", "scopeId": alice_id(app), "period": "day",
                                                 "maxTokens": 15})
    for message in ("two", "three"):
        refused = user.post("/api/agents/helper/chat", json={"message": message})
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["code"] == "budget_exceeded"
