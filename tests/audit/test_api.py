"""``GET /api/admin/audit``: filters by type, user and time, keyset pages newest first, bad input a 422; the
JSONL export holds the same items."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from tests.audit.test_events import events
from tests.support import ApiClient, LiveApp, login


def test_filters_and_keyset_pages(app: LiveApp, admin: ApiClient) -> None:
    for i in range(4):
        admin.ok("POST", "/api/admin/users", json={"username": f"user{i}", "password": "password123"})
    with app.client() as c:
        login(c, "user2")
    every = events(admin)
    assert [e["id"] for e in every] == sorted((e["id"] for e in every), reverse=True)
    seen: list[int] = []
    cursor = None
    while True:
        page = admin.ok("GET", "/api/admin/audit", params={"limit": 2, **({"cursor": cursor} if cursor else {})})
        seen += [e["id"] for e in page["items"]]
        cursor = page["nextCursor"]
        if cursor is None:
            break
        assert len(page["items"]) == 2
    assert seen == [e["id"] for e in every]
    u2 = events(admin, userId=4)  # user2: the admin is 1, user0 2, user1 3
    assert [e["type"] for e in u2] == ["auth.sign_in"] and u2[0]["actorName"] == "user2"
    assert len(events(admin, type="admin.change")) == 4
    today = datetime.now(UTC).date()
    assert len(events(admin, **{"from": today.isoformat(), "to": today.isoformat()})) == len(every)
    assert events(admin, **{"to": (today - timedelta(days=1)).isoformat()}) == []
    later = (datetime.now(UTC) + timedelta(minutes=5)).isoformat()
    assert events(admin, **{"from": later}) == []


def test_bad_filters_are_422(admin: ApiClient) -> None:
    for params in ({"cursor": "abc"}, {"from": "yesterday"}, {"limit": 0}, {"userId": 0},
                   {"from": "2026-12-03", "to": "2026-12-01"}):
        r = admin.get("/api/admin/audit", params=params)
        assert r.status_code == 422 and r.json()["error"]["code"] == "validation_error", (params, r.text)


def test_the_jsonl_export_holds_every_matching_event(app: LiveApp, admin: ApiClient) -> None:
    admin.ok("POST", "/api/admin/users", json={"username": "eve", "password": "password123"})
    r = admin.get("/api/admin/audit.jsonl")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/jsonl")
    assert "attachment" in r.headers["content-disposition"]
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert lines == events(admin)
    only = [json.loads(line) for line in admin.get("/api/admin/audit.jsonl", params={"type": "admin.change"}).text
            .splitlines()]
    assert [e["type"] for e in only] == ["admin.change"]
