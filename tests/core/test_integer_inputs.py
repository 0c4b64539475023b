"""Every integer a client sends (an id in the path, a filter in the query, a reference in a body) is
bounded to what the database's integer columns hold. Beyond that, SQLite raised ``OverflowError`` at
2**63 and PostgreSQL's driver ``DataError`` at 2**31 (its ``INTEGER`` is 32 bits): both became 500s."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import ApiClient

TOO_BIG = (2**31, 2**63, 10**21)

PATHS = (
    ("DELETE", "/api/auth/tokens/{n}"),
    ("PATCH", "/api/admin/users/{n}"),
    ("GET", "/api/admin/models/{n}"),
    ("PUT", "/api/admin/models/{n}"),
    ("DELETE", "/api/admin/models/{n}"),
    ("POST", "/api/admin/models/{n}/test"),
    ("GET", "/api/admin/agents/{n}"),
    ("PUT", "/api/admin/agents/{n}"),
    ("DELETE", "/api/admin/agents/{n}"),
    ("POST", "/api/admin/agents/{n}/card/refresh"),
    ("GET", "/api/admin/agents/{n}/tools"),
    ("PUT", "/api/admin/agents/{n}/tools"),
    ("GET", "/api/agent-documents/ad_missing/versions/{n}"),
    ("POST", "/api/agent-documents/ad_missing/versions/{n}/restore"),
)
BODIES: dict[str, Any] = {"PATCH": {}, "PUT": {}}


def _refused(response: Any) -> None:
    assert response.status_code in (404, 422), (response.request.url, response.status_code, response.text)
    assert response.json()["error"]["code"]


@pytest.mark.parametrize("n", TOO_BIG)
def test_ids_in_the_path(admin: ApiClient, n: int) -> None:
    for method, path in PATHS:
        body = [] if path.endswith("/tools") and method == "PUT" else BODIES.get(method)
        _refused(admin.request(method, path.format(n=n), json=body))


@pytest.mark.parametrize("n", TOO_BIG)
def test_ids_in_the_query_and_in_bodies(admin: ApiClient, n: int) -> None:
    _refused(admin.get("/api/agent-sessions", params={"agentId": n}))
    _refused(admin.get("/api/agent-sessions/search", params={"q": "a", "agentId": n}))
    _refused(admin.post("/api/admin/agents", json={"slug": "big", "name": "Big", "modelId": n}))
    target = admin.ok("POST", "/api/admin/agents", json={"slug": "small", "name": "Small"}, status=201)["id"]
    _refused(admin.put(f"/api/admin/agents/{target}", json={"modelId": n}))
    tool = admin.ok("POST", "/api/agent-tools", json={"slug": "calc", "name": "Calc", "type": "calculator"},
                    status=201)
    _refused(admin.put(f"/api/admin/agents/{target}/tools", json=[{"toolId": tool["id"], "position": n}]))



def test_integers_in_bodies_are_json_numbers(admin: ApiClient) -> None:
    """A lax parse took "5" and 5.0 as 5 and ``true`` as 1, saving a client's bug as if it were meant."""
    target = admin.ok("POST", "/api/admin/agents", json={"slug": "strict", "name": "Strict"}, status=201)
    tool = admin.ok("POST", "/api/agent-tools", json={"slug": "calc", "name": "Calc", "type": "calculator"},
                    status=201)
    for value in ("5", 5.0, True, "1e3", -1):
        for field in ("maxSteps", "maxOutputTokens", "modelId"):
            _refused(admin.post("/api/admin/agents", json={"slug": "lax", "name": "Lax", field: value}))
            _refused(admin.put(f"/api/admin/agents/{target['id']}", json={field: value}))
        links = [{"toolId": tool["id"], "position": value}]
        _refused(admin.put(f"/api/admin/agents/{target['id']}/tools", json=links))
    assert admin.ok("GET", f"/api/admin/agents/{target['id']}")["maxSteps"] == target["maxSteps"]
    assert admin.ok("GET", f"/api/admin/agents/{target['id']}/tools")["items"] == []
    assert "lax" not in [a["slug"] for a in admin.ok("GET", "/api/admin/agents")["items"]]


def test_bad_page_numbers(admin: ApiClient) -> None:
    bad = ("abc", "1.5", "", "true", "0", "-1", "1e3", "99999999999999999999")
    for params in [{"page": v} for v in (*bad, "100001")] + [{"pageSize": v} for v in (*bad, "101")]:
        _refused(admin.get("/api/agent-sessions", params=params))
        _refused(admin.get("/api/admin/agents", params=params))


def _integer_schemas(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in [schema, *schema.get("anyOf", ())] if s.get("type") == "integer"]


def test_every_integer_in_a_path_or_query_is_bounded(admin: ApiClient) -> None:
    """So a new route cannot take a plain ``int`` again (``DbInt`` sets the bound): the search's
    ``agentId`` did, and a number past 2**63 was a 500."""
    unbounded = [
        f"{method.upper()} {path} {param['name']}"
        for path, methods in admin.get("/openapi.json").json()["paths"].items()
        for method, operation in methods.items()
        for param in operation.get("parameters", ())
        for schema in _integer_schemas(param.get("schema", {}))
        if "maximum" not in schema and "exclusiveMaximum" not in schema
    ]
    assert unbounded == []
