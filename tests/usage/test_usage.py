"""Usage records and reports over HTTP (issue 33, points 1 and 2): every turn's tokens and cost are
recorded for the user who caused them, in the turn's own transaction, and the reports and the CSV have the
contract's shapes."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient, LiveApp
from tests.usage.conftest import IN_PRICE, OUT_PRICE


def records(app: LiveApp) -> list[tuple[Any, ...]]:
    return app.sql("SELECT user_id, agent_id, model_id, session_id, source, input_tokens, output_tokens, cost "
                   "FROM usage_records ORDER BY id")


def user_id(app: LiveApp, name: str) -> int:
    return int(app.sql("SELECT id FROM users WHERE username = ?", (name,))[0][0])


def cost(tokens_in: int, tokens_out: int) -> float:
    return (tokens_in * IN_PRICE + tokens_out * OUT_PRICE) / 1_000_000


def test_a_turn_with_two_model_calls_is_one_record_of_their_sums(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(call("echo", {"text": "hi"}, input_tokens=10, output_tokens=4),
                    text("done", input_tokens=20, output_tokens=6))
    sid = chat(user, "helper", "go").session_id
    [row] = records(app)
    assert row[:7] == (user_id(app, "alice"), agent["id"], agent["modelId"], sid, "chat", 30, 10)
    assert row[7] == pytest.approx(cost(30, 10))


def test_a_model_without_prices_records_no_cost(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    admin.ok("PUT", f"/api/admin/models/{agent['modelId']}", json={"inputPricePerMTok": None})
    fake_model.push(text("hello", input_tokens=10, output_tokens=3))
    chat(user, "helper", "hi")
    assert [r[4:] for r in records(app)] == [("chat", 10, 3, None)]
    report = user.ok("GET", "/api/usage?groupBy=model")
    assert report["items"][0]["cost"] is None and report["total"]["cost"] is None


def test_model_prices_are_read_set_and_cleared(admin: ApiClient, priced: int) -> None:
    row = admin.ok("GET", f"/api/admin/models/{priced}")
    assert (row["inputPricePerMTok"], row["outputPricePerMTok"]) == (IN_PRICE, OUT_PRICE)
    cleared = admin.ok("PUT", f"/api/admin/models/{priced}", json={"outputPricePerMTok": None})
    assert (cleared["inputPricePerMTok"], cleared["outputPricePerMTok"]) == (IN_PRICE, None)
    kept = admin.ok("PUT", f"/api/admin/models/{priced}", json={"name": "Renamed"})
    assert kept["inputPricePerMTok"] == IN_PRICE
    bad = admin.put(f"/api/admin/models/{priced}", json={"inputPricePerMTok": -1})
    assert bad.status_code == 422 and "inputPricePerMTok" in bad.json()["error"]["fields"]
    created = admin.ok("POST", "/api/admin/models", json={"name": "Priced", "provider": "openai",
                                                           "model": "m", "inputPricePerMTok": 3,
                                                           "outputPricePerMTok": 15})
    assert (created["inputPricePerMTok"], created["outputPricePerMTok"]) == (3, 15)


def test_own_usage_by_day_agent_and_model_shows_only_the_callers(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("a", input_tokens=10, output_tokens=5), text("b", input_tokens=7, output_tokens=1))
    chat(user, "helper", "one")
    chat(admin, "helper", "two")
    today = datetime.now(UTC).date().isoformat()
    by_day = user.ok("GET", f"/api/usage?from={today}&to={today}&groupBy=day")
    expected = {"inputTokens": 10, "outputTokens": 5, "cost": pytest.approx(cost(10, 5)), "turns": 1}
    assert by_day == {"items": [{"key": today, "label": today, **expected}], "total": expected}
    by_agent = user.ok("GET", "/api/usage?groupBy=agent")["items"]
    assert [(i["key"], i["label"]) for i in by_agent] == [(str(agent["id"]), "Helper")]
    by_model = user.ok("GET", "/api/usage?groupBy=model")["items"]
    assert [(i["key"], i["label"]) for i in by_model] == [(str(agent["modelId"]), "Fake")]
    assert user.get("/api/usage?groupBy=user").status_code == 422  # the caller's own: no grouping by user


def test_admin_usage_by_user_with_csv_and_only_for_admins(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("a", input_tokens=10, output_tokens=5), text("b", input_tokens=7, output_tokens=1),
                    text("c", input_tokens=100, output_tokens=50))
    chat(user, "helper", "one")
    chat(admin, "helper", "two")
    chat(user, "helper", "three")
    report = admin.ok("GET", "/api/admin/usage?groupBy=user")
    assert [(i["label"], i["inputTokens"], i["outputTokens"], i["turns"]) for i in report["items"]] == [
        ("alice", 110, 55, 2), ("admin", 7, 1, 1)]
    assert report["total"]["inputTokens"] == 117 and report["total"]["turns"] == 3
    got = admin.get("/api/admin/usage.csv?groupBy=user")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/csv")
    assert "attachment" in got.headers["content-disposition"]
    rows = list(csv.reader(io.StringIO(got.text)))
    assert rows[0] == ["key", "label", "inputTokens", "outputTokens", "cost", "turns"]
    assert rows[1][1:4] == ["alice", "110", "55"] and float(rows[1][4]) == pytest.approx(cost(110, 55))
    for path in ("/api/admin/usage", "/api/admin/usage.csv"):
        refused = user.get(path)
        assert refused.status_code == 403 and refused.json()["error"]["code"] == "admin_required"


def test_days_outside_the_range_are_left_out_and_bad_ranges_refused(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    fake_model.push(text("a", input_tokens=10, output_tokens=5))
    chat(user, "helper", "one")
    yesterday = (datetime.now(UTC).date() - timedelta(days=1)).isoformat()
    assert user.ok("GET", f"/api/usage?from={yesterday}&to={yesterday}")["items"] == []
    reversed_ = user.get("/api/usage?from=2026-12-02&to=2026-12-01")
    assert reversed_.status_code == 422
    assert reversed_.json()["error"]["fieldCodes"]["from"]["code"] == "date_range_reversed"
    assert user.get("/api/usage?from=2020-01-01&to=2026-01-01").status_code == 422
    assert user.get("/api/usage?from=yesterday").status_code == 422


def test_a_generated_title_counts_for_the_sessions_owner(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"generateTitles": True})
    fake_model.push(text("Use pandas.", input_tokens=10, output_tokens=2),
                    text("Reading CSV files", input_tokens=40, output_tokens=3))
    sid = chat(user, "helper", "How do I read a CSV?").session_id
    user.ok("POST", f"/api/agent-sessions/{sid}/title")
    assert [r[3:7] for r in records(app)] == [(sid, "chat", 10, 2), (sid, "title", 40, 3)]
    assert {r[0] for r in records(app)} == {user_id(app, "alice")}
    assert user.ok("GET", "/api/usage")["total"]["turns"] == 1  # a title is not a turn
