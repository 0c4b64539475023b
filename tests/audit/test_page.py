"""Admin → Audit (``/admin/audit``) as the server renders it: the rows the API lists, filters that narrow
them, "Older" links on the cursor, the export link with the same filters, an admin change's before and
after, both languages, and bad filters as the error page."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime

from tests.audit.test_events import events
from tests.support import ApiClient, LiveApp, login

ROW = re.compile(r'<tr data-id="(\d+)" data-type="([a-z0-9_.]+)">')


def rows(page: str) -> list[tuple[int, str]]:
    return [(int(i), kind) for i, kind in ROW.findall(page)]


def link(page: str, element_id: str) -> str | None:
    found = re.search(rf'<a id="{element_id}" href="([^"]*)"|<a href="([^"]*)"[^>]*id="{element_id}"', page)
    return html.unescape(found.group(1) or found.group(2)) if found else None


def test_the_page_lists_the_trail_and_its_filters_narrow_it(app: LiveApp, admin: ApiClient) -> None:
    for i in range(3):
        admin.ok("POST", "/api/admin/users", json={"username": f"user{i}", "password": "password123"})
    with app.client() as c:
        login(c, "user1")
    page = admin.get("/admin/audit")
    assert page.status_code == 200 and 'href="/admin/audit" aria-current="page"' in page.text
    assert rows(page.text) == [(e["id"], e["type"]) for e in events(admin)]
    assert link(page.text, "audit-export") == "/api/admin/audit.jsonl" and link(page.text, "audit-older") is None

    changes = admin.get("/admin/audit", params={"type": "admin.change"}).text
    assert [kind for _, kind in rows(changes)] == ["admin.change"] * 3
    assert '<option value="admin.change" selected>Admin change</option>' in changes
    assert rows(admin.get("/admin/audit?type=admin.change&userId=&from=&to=").text) == rows(changes)  # the form's
    signed_in = admin.get("/admin/audit", params={"userId": 3}).text  # user1: the admin is 1, user0 2
    assert rows(signed_in) == [(e["id"], "auth.sign_in") for e in events(admin, userId=3)]
    assert '<option value="3" selected>user1</option>' in signed_in
    today = datetime.now(UTC).date().isoformat()
    assert rows(admin.get("/admin/audit", params={"from": today, "to": today}).text) == rows(page.text)
    assert 'id="audit-empty"' in admin.get("/admin/audit", params={"to": "2020-01-01"}).text


def test_older_links_walk_the_cursor_with_the_filters_kept(app: LiveApp, admin: ApiClient) -> None:
    for i in range(5):
        admin.ok("POST", "/api/admin/users", json={"username": f"user{i}", "password": "password123"})
    expected = [e["id"] for e in events(admin, type="admin.change")]
    seen: list[int] = []
    address: str | None = "/admin/audit?type=admin.change&limit=2"
    while address is not None:
        page = admin.get(address).text
        seen += [i for i, _ in rows(page)]
        address = link(page, "audit-older")
        if address is not None:
            assert "type=admin.change" in address and "limit=2" in address
            assert link(page, "audit-export") == "/api/admin/audit.jsonl?type=admin.change"
    assert seen == expected and len(seen) == 5
    assert link(page, "audit-newest") == "/admin/audit?type=admin.change&limit=2"


def test_the_export_link_carries_the_filters(app: LiveApp, admin: ApiClient) -> None:
    admin.ok("POST", "/api/admin/users", json={"username": "eve", "password": "password123"})
    page = admin.get("/admin/audit", params={"type": "admin.change", "userId": 1, "from": "2026-01-01"}).text
    export = link(page, "audit-export")
    assert export == "/api/admin/audit.jsonl?type=admin.change&userId=1&from=2026-01-01"
    lines = [json.loads(line) for line in admin.get(export).text.splitlines()]
    assert [e["id"] for e in lines] == [i for i, _ in rows(page)] and len(lines) == 1


def test_an_admin_change_reads_as_before_and_after_with_secrets_redacted(app: LiveApp, admin: ApiClient) -> None:
    user = admin.ok("POST", "/api/admin/users", json={"username": "carol", "password": "password123"})
    admin.ok("PATCH", f"/api/admin/users/{user['id']}", json={"role": "admin"})
    admin.ok("PATCH", f"/api/admin/users/{user['id']}", json={"password": "new-password-1"})
    page = admin.get("/admin/audit", params={"type": "admin.change"}).text
    lines = [html.unescape(m) for m in re.findall(r'<span class="audit-line">(.*?)</span>', page)]
    assert lines[1] == f"users #{user['id']} update (role: user → admin)"
    assert lines[0].startswith("users update (password_hash: [redacted]") and "; auth_sessions delete" in lines[0]
    assert lines[2].startswith(f"users #{user['id']} insert (") and "username: carol" in lines[2]
    assert f'<caption class="mono">users #{user["id"]} update</caption>' in page
    assert '<td class="mono">role</td><td class="mono">user</td><td class="mono">admin</td>' in page
    assert "$argon2" not in page and "new-password-1" not in page
    assert '<a href="/admin/audit?userId=1">admin</a>' in page  # the actor filters by its account


def test_the_page_speaks_chinese(app: LiveApp, admin: ApiClient) -> None:
    page = admin.get("/admin/audit", headers={"Accept-Language": "zh-CN"}).text
    assert "审计日志" in page and "导出 JSONL" in page and ">登录</span>" in page


def test_bad_filters_are_the_422_error_page(admin: ApiClient) -> None:
    for params in ({"from": "yesterday"}, {"from": "2026-12-03", "to": "2026-12-01"}, {"cursor": "abc"},
                   {"limit": 0}, {"userId": 0}):
        r = admin.get("/admin/audit", params=params)
        assert r.status_code == 422 and r.headers["content-type"].startswith("text/html"), (params, r.text)
        assert 'data-code="validation_error"' in r.text, params
