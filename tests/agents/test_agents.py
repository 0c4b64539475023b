"""Agents: admin CRUD with validation and conflicts; signed-in users see enabled agents only."""

from __future__ import annotations

from tests.support import ApiClient


def _agent(**kw) -> dict:
    body = {"slug": "helper", "name": "Helper", "description": "Helps", "systemPrompt": "Be brief."}
    body.update(kw)
    return body


def test_admin_crud(admin: ApiClient, model_id: int) -> None:
    created = admin.ok("POST", "/api/admin/agents", json=_agent(modelId=model_id, maxSteps=5, a2aCallable=True))
    assert created["slug"] == "helper" and created["modelId"] == model_id and created["maxSteps"] == 5
    assert created["maxOutputTokens"] == 4096 and created["enabled"] and created["a2aCallable"]
    got = admin.ok("GET", f"/api/admin/agents/{created['id']}")
    assert got["systemPrompt"] == "Be brief."
    upd = admin.ok("PUT", f"/api/admin/agents/{created['id']}", json={"name": "Helper 2", "modelId": None})
    assert upd["name"] == "Helper 2" and upd["modelId"] is None and upd["slug"] == "helper"
    page = admin.ok("GET", "/api/admin/agents", params={"pageSize": 10})
    assert page["total"] == 1 and page["page"] == 1 and page["pageSize"] == 10
    admin.ok("DELETE", f"/api/admin/agents/{created['id']}", status=204)
    assert admin.get(f"/api/admin/agents/{created['id']}").status_code == 404
    assert admin.delete(f"/api/admin/agents/{created['id']}").status_code == 404


def test_duplicate_slug_is_409(admin: ApiClient) -> None:
    a = admin.ok("POST", "/api/admin/agents", json=_agent())
    r = admin.post("/api/admin/agents", json=_agent(name="Other"))
    assert r.status_code == 409 and r.json()["error"]["code"] == "agent_slug_taken"
    assert r.json()["error"]["fieldCodes"] == {"slug": {"code": "slug_taken"}}  # the form marks the field
    b = admin.ok("POST", "/api/admin/agents", json=_agent(slug="other"))
    r = admin.put(f"/api/admin/agents/{b['id']}", json={"slug": "helper"})
    assert r.status_code == 409
    assert admin.ok("PUT", f"/api/admin/agents/{a['id']}", json={"slug": "helper"})["slug"] == "helper"


def test_validation(admin: ApiClient) -> None:
    r = admin.post("/api/admin/agents", json=_agent(slug="Not URL safe!", maxSteps=0))
    assert r.status_code == 422
    assert {"slug", "maxSteps"} <= set(r.json()["error"]["fields"])
    r = admin.post("/api/admin/agents", json=_agent(modelId=999))
    assert r.status_code == 422 and "modelId" in r.json()["error"]["fields"]
    r = admin.post("/api/admin/agents", json={"slug": "x"})
    assert r.status_code == 422 and "name" in r.json()["error"]["fields"]


def test_users_see_enabled_agents_without_prompt(admin: ApiClient, user: ApiClient) -> None:
    admin.ok("POST", "/api/admin/agents", json=_agent())
    off = admin.ok("POST", "/api/admin/agents", json=_agent(slug="off", name="Off", enabled=False))
    page = user.ok("GET", "/api/agents")
    assert [a["slug"] for a in page["items"]] == ["helper"] and page["total"] == 1
    assert "systemPrompt" not in page["items"][0]
    assert user.ok("GET", "/api/agents/helper")["name"] == "Helper"
    assert user.get(f"/api/agents/{off['slug']}").status_code == 404
    assert user.get("/api/agents/nope").json()["error"]["code"] == "agent_not_found"


def test_agents_require_sign_in(anon: ApiClient) -> None:
    assert anon.get("/api/agents").status_code == 401
    assert anon.post("/api/admin/agents", json=_agent()).status_code == 401


def test_pagination_params_validated(admin: ApiClient) -> None:
    r = admin.get("/api/admin/agents", params={"page": 0})
    assert r.status_code == 422 and "page" in r.json()["error"]["fields"]
    r = admin.get("/api/admin/agents", params={"pageSize": 1000})
    assert r.status_code == 422 and "pageSize" in r.json()["error"]["fields"]


def _tool(admin: ApiClient, slug: str, name: str, *, admin_only: bool) -> dict:
    return admin.ok("POST", "/api/agent-tools", status=201,
                    json={"slug": slug, "name": name, "type": "calculator", "adminOnly": admin_only})


def test_a_prompt_naming_an_admin_only_tool_gets_a_warning(admin: ApiClient, user: ApiClient) -> None:
    """Hidden means hidden in prompts too: a user's model never gets an admin-only tool, so a prompt that
    names one would tell it about a tool it does not have."""
    _tool(admin, "fetch", "Fetch a web page", admin_only=True)
    _tool(admin, "web-search", "Web search", admin_only=True)
    _tool(admin, "calc", "Calculator", admin_only=False)
    created = admin.ok("POST", "/api/admin/agents", json=_agent(systemPrompt="Use FETCH to read pages; calc for sums."))
    assert created["warnings"] == [
        "The system prompt names the admin-only tool 'Fetch a web page' (fetch): users who are not admins do not "
        "get it, but their model would still read about it. Describe the task instead; the model sees the tools "
        "it has in its tool list."
    ]
    updated = admin.ok("PUT", f"/api/admin/agents/{created['id']}", json={"systemPrompt": "Try a web\nsearch."})
    assert [w.split(":")[0] for w in updated["warnings"]] == [
        "The system prompt names the admin-only tool 'Web search' (web-search)"]
    for prompt in ("Prefetching and web-searching are different words.", "Use the calculator.", ""):
        assert admin.ok("POST", "/api/admin/agents/prompt-check", json={"systemPrompt": prompt}) == {"warnings": []}
    both = admin.ok("POST", "/api/admin/agents/prompt-check", json={"systemPrompt": "fetch, then web-search"})
    assert len(both["warnings"]) == 2
    assert "warnings" not in admin.ok("GET", f"/api/admin/agents/{created['id']}")
    assert user.post("/api/admin/agents/prompt-check", json={"systemPrompt": "fetch"}).status_code == 403


def test_starter_prompts_are_stored_trimmed_limited_and_shown_to_users(admin: ApiClient, user: ApiClient) -> None:
    created = admin.ok("POST", "/api/admin/agents", json=_agent(starterPrompts=["  Plan my week ", "Explain X"]))
    assert created["starterPrompts"] == ["Plan my week", "Explain X"]
    assert admin.ok("POST", "/api/admin/agents", json=_agent(slug="plain"))["starterPrompts"] == []
    assert user.ok("GET", "/api/agents/helper")["starterPrompts"] == ["Plan my week", "Explain X"]
    for bad, field in ((["ok", ""], "starterPrompts.1"), (["x" * 201], "starterPrompts.0"),
                       ([f"p{i}" for i in range(7)], "starterPrompts")):
        r = admin.put(f"/api/admin/agents/{created['id']}", json={"starterPrompts": bad})
        assert r.status_code == 422 and list(r.json()["error"]["fields"]) == [field], r.json()
    updated = admin.ok("PUT", f"/api/admin/agents/{created['id']}", json={"starterPrompts": ["Only this"]})
    assert updated["starterPrompts"] == ["Only this"]
    assert admin.ok("PUT", f"/api/admin/agents/{created['id']}", json={"name": "Renamed"})["starterPrompts"] == [
        "Only this"]
