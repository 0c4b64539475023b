"""REST API /api/agent-documents over real HTTP: CRUD, the list shape, errors (401/404/413/422),
``sessionId`` neither accepted nor returned, versions with restore, and isolation between users."""

from __future__ import annotations

import sqlite3
from typing import Any

from agentloft.core.textsearch import register_sqlite_functions
from tests.documents.conftest import ToolCaller, create_doc
from tests.support import ApiClient, LiveApp

BASE = "/api/agent-documents"
READ_KEYS = {"id", "type", "title", "summary", "tags", "content", "createdAt", "updatedAt"}


def test_crud_round_trip(app: LiveApp, user: ApiClient) -> None:
    doc = create_doc(user, title="  Weekly report ", content="# Done\n\n- shipped search", tags="report, weekly")
    assert set(doc) == READ_KEYS
    assert doc["title"] == "Weekly report" and doc["type"] == "document" and doc["tags"] == "report,weekly"
    assert doc["summary"] == "# Done - shipped search"
    assert user.ok("GET", f"{BASE}/{doc['id']}") == doc
    updated = user.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "new body", "type": "memory"})
    assert updated["content"] == "new body" and updated["summary"] == "new body" and updated["type"] == "memory"
    assert updated["updatedAt"] > doc["updatedAt"] and updated["createdAt"] == doc["createdAt"]
    user.ok("DELETE", f"{BASE}/{doc['id']}", status=204)
    r = user.get(f"{BASE}/{doc['id']}")
    assert r.status_code == 404
    assert r.json() == {"error": {"code": "document_not_found", "message": "document not found or no access",
                                  "requestId": r.headers["x-request-id"]}}
    assert app.sql("SELECT count(*) FROM agent_documents") == [(0,)]


def test_an_update_recuts_the_summary_only_when_the_content_changes(app: LiveApp, user: ApiClient,
                                                                    make_user: Any) -> None:
    doc = create_doc(user, content="first body")
    url = f"{BASE}/{doc['id']}"
    own = user.ok("PUT", url, json={"summary": "my own words"})
    assert (own["summary"], own["content"]) == ("my own words", "first body")
    same = user.ok("PUT", url, json={"content": "first body", "title": doc["title"]})  # nothing changes
    assert same == own  # the own summary stays, updatedAt too, and no version is kept
    assert user.ok("GET", f"{url}/versions")["total"] == 1
    changed = user.ok("PUT", url, json={"content": "second   body\nhere"})
    assert changed["summary"] == "second body here" and changed["updatedAt"] > own["updatedAt"]
    both = user.ok("PUT", url, json={"content": "third body", "summary": "  "})  # empty: cut from the new one
    assert both["summary"] == "third body"
    user.ok("PUT", url, json={"summary": "mine again"})
    recut = user.ok("PUT", url, json={"summary": ""})  # empty alone: cut from the stored content
    assert recut["summary"] == "third body" and recut["content"] == "third body"
    assert make_user("eve").put(url, json={"content": "x"}).status_code == 404
    assert user.put(f"{BASE}/ad_missing", json={"content": "x"}).status_code == 404
    assert user.ok("GET", url)["content"] == "third body"


def test_list_shape_newest_first_type_and_paging(user: ApiClient) -> None:
    ids = [create_doc(user, title=f"d{i}", type="memory" if i < 3 else "document")["id"] for i in range(5)]
    page = user.ok("GET", BASE, params={"pageSize": 2})
    assert set(page) == {"items", "total", "page", "pageSize", "hasMore"}
    assert page["total"] == 5 and page["hasMore"] is True and [d["id"] for d in page["items"]] == ids[::-1][:2]
    assert "content" not in page["items"][0]
    last = user.ok("GET", BASE, params={"pageSize": 2, "page": 3})
    assert [d["id"] for d in last["items"]] == [ids[0]] and last["hasMore"] is False
    memory = user.ok("GET", BASE, params={"type": "memory"})
    assert memory["total"] == 3 and {d["type"] for d in memory["items"]} == {"memory"}
    assert user.get(BASE, params={"type": "note"}).status_code == 422
    assert user.get(BASE, params={"pageSize": 0}).status_code == 422


def test_every_endpoint_requires_sign_in(anon: ApiClient, user: ApiClient) -> None:
    doc = create_doc(user)
    calls = [
        ("GET", BASE, None), ("POST", BASE, {"title": "t", "content": "c"}),
        ("GET", f"{BASE}/{doc['id']}", None), ("PUT", f"{BASE}/{doc['id']}", {"title": "x"}),
        ("DELETE", f"{BASE}/{doc['id']}", None), ("GET", f"{BASE}/{doc['id']}/versions", None),
        ("GET", f"{BASE}/{doc['id']}/versions/1", None), ("POST", f"{BASE}/{doc['id']}/versions/1/restore", None),
    ]
    for method, url, body in calls:
        r = anon.request(method, url, json=body)
        assert r.status_code == 401, (method, url, r.text)
        assert r.json()["error"]["code"] == "not_authenticated"


def test_validation_errors_name_the_field(user: ApiClient) -> None:
    cases = [
        ({"content": "c"}, "title"),
        ({"title": "   ", "content": "c"}, "title"),
        ({"title": "x" * 256, "content": "c"}, "title"),
        ({"title": "t"}, "content"),
        ({"title": "t", "content": "c", "type": "note"}, "type"),
        ({"title": "t", "content": "c", "tags": "x" * 501}, "tags"),
        ({"title": "t", "content": "c", "sessionId": "as_x"}, "sessionId"),
    ]
    for body, field in cases:
        r = user.post(BASE, json=body)
        assert r.status_code == 422, (body, r.text)
        err = r.json()["error"]
        assert err["code"] == "validation_error" and field in err["fields"], (body, err)
    doc = create_doc(user)
    r = user.put(f"{BASE}/{doc['id']}", json={"sessionId": "as_x"})
    assert r.status_code == 422 and "sessionId" in r.json()["error"]["fields"]
    r = user.put(f"{BASE}/{doc['id']}", json={"title": ""})
    assert r.status_code == 422 and "title" in r.json()["error"]["fields"]


def test_content_too_long_is_413(app: LiveApp, user: ApiClient) -> None:
    r = user.post(BASE, json={"title": "t", "content": "x" * 200_001})
    assert r.status_code == 413
    err = r.json()["error"]
    assert err["code"] == "content_too_long" and "content exceeds the maximum length" in err["message"]
    doc = create_doc(user)
    assert user.put(f"{BASE}/{doc['id']}", json={"content": "y" * 200_001}).status_code == 413
    assert user.ok("POST", BASE, json={"title": "t", "content": "x" * 200_000}, status=201)
    assert app.sql("SELECT count(*) FROM agent_document_versions") == [(0,)]


def test_session_id_is_never_returned(app: LiveApp, user: ApiClient, call_tool: ToolCaller, alice_id: int) -> None:
    made = call_tool.ok(alice_id, {"action": "create", "title": "From a chat", "content": "c"}, session_id="as_1")
    assert app.sql("SELECT session_id FROM agent_documents WHERE id = ?", (made["id"],)) == [("as_1",)]
    got = user.ok("GET", f"{BASE}/{made['id']}")
    listed = user.ok("GET", BASE)["items"][0]
    assert "sessionId" not in got and "sessionId" not in listed and "as_1" not in str(got)
    assert got["type"] == "memory"


def test_versions_and_restore(app: LiveApp, user: ApiClient) -> None:
    doc = create_doc(user, title="Plan", content="v1 text")
    assert user.ok("GET", f"{BASE}/{doc['id']}/versions")["total"] == 0
    user.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "v2 text"})
    user.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "v3 text", "title": "Plan B"})
    same = user.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "v3 text"})  # no change, no version
    versions = user.ok("GET", f"{BASE}/{doc['id']}/versions")
    assert versions["total"] == 2 and [v["version"] for v in versions["items"]] == [2, 1]
    assert versions["items"][1]["title"] == "Plan" and versions["items"][1]["contentLength"] == 7
    assert versions["items"][1]["createdAt"] == doc["updatedAt"]
    one = user.ok("GET", f"{BASE}/{doc['id']}/versions/1")
    assert one["content"] == "v1 text" and one["version"] == 1
    restored = user.ok("POST", f"{BASE}/{doc['id']}/versions/1/restore")
    assert restored["content"] == "v1 text" and restored["title"] == "Plan"
    assert restored["updatedAt"] > same["updatedAt"]
    after = user.ok("GET", f"{BASE}/{doc['id']}/versions")
    assert after["total"] == 3 and after["items"][0]["title"] == "Plan B"  # the restore can be undone
    r = user.post(f"{BASE}/{doc['id']}/versions/9/restore")
    assert r.status_code == 404 and r.json()["error"]["code"] == "document_version_not_found"
    assert user.get(f"{BASE}/{doc['id']}/versions/9").status_code == 404


def test_second_user_and_admin_get_not_found_everywhere(
    app: LiveApp, user: ApiClient, bob: ApiClient, admin: ApiClient
) -> None:
    doc = create_doc(user, title="Alice only", content="secret words here")
    user.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "secret words v2"})
    for other in (bob, admin):
        for method, url, body in [
            ("GET", f"{BASE}/{doc['id']}", None),
            ("PUT", f"{BASE}/{doc['id']}", {"title": "hijacked"}),
            ("DELETE", f"{BASE}/{doc['id']}", None),
            ("GET", f"{BASE}/{doc['id']}/versions", None),
            ("GET", f"{BASE}/{doc['id']}/versions/1", None),
            ("POST", f"{BASE}/{doc['id']}/versions/1/restore", None),
        ]:
            r = other.request(method, url, json=body)
            assert r.status_code == 404, (method, url, r.text)
            assert r.json()["error"] == {"code": "document_not_found", "message": "document not found or no access",
                                         "requestId": r.headers["x-request-id"]}
        assert other.ok("GET", BASE)["total"] == 0
        assert other.ok("GET", BASE, params={"q": "secret"})["total"] == 0
    assert user.ok("GET", f"{BASE}/{doc['id']}")["content"] == "secret words v2"
    missing = bob.get(f"{BASE}/ad_nothing_0000000000")
    hidden = bob.get(f"{BASE}/{doc['id']}")
    assert missing.json()["error"]["requestId"] != hidden.json()["error"]["requestId"]
    assert ({**missing.json()["error"], "requestId": ""} == {**hidden.json()["error"], "requestId": ""}), \
        "no way to tell the two apart"


def test_deleting_a_user_deletes_their_documents_and_index(app: LiveApp, make_user) -> None:
    carol = make_user("carol")
    doc = create_doc(carol, content="carol wrote this")
    carol.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "carol wrote that"})
    if app.database_url:  # PostgreSQL: foreign keys are always on
        app.sql("DELETE FROM users WHERE username = 'carol'")
    else:
        con = sqlite3.connect(app.db_path)
        try:
            register_sqlite_functions(con)  # the index triggers call them
            con.execute("PRAGMA foreign_keys=ON")
            con.execute("DELETE FROM users WHERE username = 'carol'")
            con.commit()
        finally:
            con.close()
    assert app.sql("SELECT count(*) FROM agent_documents") == [(0,)]
    assert app.sql("SELECT count(*) FROM agent_document_versions") == [(0,)]
    if not app.database_url:  # the SQLite full-text index (PostgreSQL indexes the table itself)
        assert app.sql("SELECT count(*) FROM agent_documents_fts WHERE agent_documents_fts MATCH 'carol'") == [(0,)]
