"""Admin API for groups: CRUD with member counts, member lists (local groups only), the one error shape
for bad input, admins only; and ``groupIds`` on agents, models and tools (unknown group -> 422)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from agentloft.core.db import Database
from agentloft.groups import service
from tests.support import ApiClient, LiveApp


def _id_of(admin: ApiClient, username: str) -> int:
    return next(u["id"] for u in admin.ok("GET", "/api/admin/users?pageSize=100")["items"] if u["username"] == username)


def test_groups_crud_and_members(admin: ApiClient, make_user: Callable[..., ApiClient]) -> None:
    make_user("bob")
    make_user("carol")
    bob, carol = _id_of(admin, "bob"), _id_of(admin, "carol")
    staff = admin.ok("POST", "/api/admin/groups", json={"name": " Staff ", "description": "everyone"})
    assert (staff["name"], staff["source"], staff["memberCount"]) == ("Staff", "local", 0)
    r = admin.post("/api/admin/groups", json={"name": "Staff"})
    assert r.status_code == 409 and r.json()["error"]["code"] == "group_name_taken"
    done = admin.ok("PUT", f"/api/admin/groups/{staff['id']}/members", json=[carol, bob, bob])
    assert done["userIds"] == sorted([bob, carol]) and done["group"]["memberCount"] == 2
    admin.ok("PUT", f"/api/admin/groups/{staff['id']}/members", json=[carol])
    assert admin.ok("GET", f"/api/admin/groups/{staff['id']}/members")["userIds"] == [carol]
    renamed = admin.ok("PUT", f"/api/admin/groups/{staff['id']}", json={"name": "Team"})
    assert renamed["name"] == "Team" and renamed["description"] == "everyone" and renamed["memberCount"] == 1
    (listed,) = admin.ok("GET", "/api/admin/groups")["items"]
    assert listed["id"] == staff["id"] and listed["memberCount"] == 1
    users = {u["username"]: u for u in admin.ok("GET", "/api/admin/users?pageSize=100")["items"]}
    assert [g["name"] for g in users["carol"]["groups"]] == ["Team"] and users["bob"]["groups"] == []
    admin.ok("DELETE", f"/api/admin/groups/{staff['id']}", status=204)
    r = admin.get(f"/api/admin/groups/{staff['id']}")
    assert r.status_code == 404 and r.json()["error"]["code"] == "group_not_found"


def test_bad_member_lists_and_names(admin: ApiClient) -> None:
    group = admin.ok("POST", "/api/admin/groups", json={"name": "g"})
    r = admin.put(f"/api/admin/groups/{group['id']}/members", json=[1, 999])
    assert r.status_code == 422 and "999" in r.json()["error"]["message"]
    assert admin.ok("GET", f"/api/admin/groups/{group['id']}")["memberCount"] == 0  # nothing half-written
    for body in (["1"], {"ids": [1]}, [1.5]):
        assert admin.put(f"/api/admin/groups/{group['id']}/members", json=body).status_code == 422
    r = admin.post("/api/admin/groups", json={"name": "  "})
    assert r.status_code == 422 and "name" in r.json()["error"]["fields"]
    assert admin.put("/api/admin/groups/999/members", json=[]).status_code == 404


def test_synced_groups_are_read_only(app: LiveApp, admin: ApiClient) -> None:
    async def sync() -> list[int]:
        db = Database(app.database_url or f"sqlite+aiosqlite:///{app.db_path}")
        try:
            async with db.session() as s:
                return await service.sync_provider_groups(db=s, user_id=1, source="corp", names=["eng"])
        finally:
            await db.dispose()

    (eng,) = asyncio.run(sync())
    (listed,) = admin.ok("GET", "/api/admin/groups")["items"]
    assert (listed["source"], listed["memberCount"]) == ("corp", 1)
    for method, url, body in (("PUT", f"/api/admin/groups/{eng}/members", []),
                              ("PUT", f"/api/admin/groups/{eng}", {"name": "x"})):
        r = admin.request(method, url, json=body)
        assert r.status_code == 409 and r.json()["error"]["code"] == "group_synced", r.text
    assert admin.ok("POST", "/api/admin/groups", json={"name": "eng"})["source"] == "local"  # its own name space
    admin.ok("DELETE", f"/api/admin/groups/{eng}", status=204)


def test_groups_are_for_admins_only(user: ApiClient) -> None:
    for method, url in (("GET", "/api/admin/groups"), ("POST", "/api/admin/groups"),
                        ("PUT", "/api/admin/groups/1/members")):
        r = user.request(method, url, json={"name": "x"} if method == "POST" else [])
        assert r.status_code == 403 and r.json()["error"]["code"] == "admin_required"


def test_group_ids_on_agents_models_and_tools(admin: ApiClient) -> None:
    a = admin.ok("POST", "/api/admin/groups", json={"name": "a"})["id"]
    b = admin.ok("POST", "/api/admin/groups", json={"name": "b"})["id"]
    made = {
        "/api/admin/agents": admin.ok("POST", "/api/admin/agents", json={"slug": "x", "name": "X", "groupIds": [b, a]}),
        "/api/admin/models": admin.ok("POST", "/api/admin/models", json={
            "name": "M", "provider": "openai", "model": "m", "baseUrl": "http://127.0.0.1:9/v1", "groupIds": [a]}),
        "/api/agent-tools": admin.ok("POST", "/api/agent-tools", json={
            "slug": "calc", "name": "Calc", "type": "calculator", "groupIds": [b]}),
    }
    assert [made[k]["groupIds"] for k in made] == [[a, b], [a], [b]]
    for base, row in made.items():
        assert admin.ok("GET", f"{base}/{row['id']}")["groupIds"] == row["groupIds"]
        assert admin.ok("PUT", f"{base}/{row['id']}", json={"groupIds": []})["groupIds"] == []
        assert admin.ok("PUT", f"{base}/{row['id']}", json={"groupIds": [a]})["groupIds"] == [a]
        assert admin.ok("PUT", f"{base}/{row['id']}", json={"name": "Renamed"})["groupIds"] == [a]  # kept
        r = admin.put(f"{base}/{row['id']}", json={"groupIds": [a, 12345]})
        assert r.status_code == 422 and r.json()["error"]["fieldCodes"]["groupIds"]["code"] == "no_such_group"
        assert admin.ok("GET", f"{base}/{row['id']}")["groupIds"] == [a]
    r = admin.post("/api/admin/agents", json={"slug": "y", "name": "Y", "groupIds": [777]})
    assert r.status_code == 422 and "groupIds" in r.json()["error"]["fields"]
    assert all(ag["slug"] != "y" for ag in admin.ok("GET", "/api/admin/agents")["items"])
    r = admin.delete(f"/api/admin/groups/{a}")  # it would open them to everyone
    assert r.status_code == 409 and r.json()["error"]["code"] == "group_in_use"
    admin.ok("DELETE", f"/api/admin/agents/{made['/api/admin/agents']['id']}", status=204)
    for base in ("/api/admin/models", "/api/agent-tools"):
        admin.ok("PUT", f"{base}/{made[base]['id']}", json={"groupIds": [b]})
    admin.ok("DELETE", f"/api/admin/groups/{a}", status=204)
    assert admin.ok("GET", f"/api/agent-tools/{made['/api/agent-tools']['id']}")["groupIds"] == [b]
