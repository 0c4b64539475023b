"""Booleans in JSON bodies are JSON's ``true`` and ``false`` (and ``null`` where a field may be left
unset). A lax parse took "yes", "on", "1" and 1 for ``true`` and "no", "off", 0 for ``false``: a client's
bug (a form's checkbox value, a number) saved as if it were meant."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Annotated, Any, Union, get_args, get_origin

from fastapi.routing import APIRoute
from pydantic import BaseModel, Strict

from agentloft.app import ROUTERS
from tests.support import ApiClient

LAX = ("yes", "on", "true", 1, 0, "1", "off", 1.0)


def _lax_bools(tp: Any, where: str, metadata: tuple[Any, ...], seen: set[type]) -> Iterator[str]:
    """Where a boolean in ``tp`` would be parsed laxly (no ``Strict()`` on it or around it)."""
    if tp is bool:
        if not any(isinstance(m, Strict) and m.strict for m in metadata):
            yield where
        return
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        if tp in seen:
            return
        seen.add(tp)
        for name, field in tp.model_fields.items():
            yield from _lax_bools(field.annotation, f"{tp.__name__}.{name}", tuple(field.metadata), seen)
        return
    if get_origin(tp) is Annotated:
        inner, *extra = get_args(tp)
        yield from _lax_bools(inner, where, (*metadata, *extra), seen)
        return
    inherited = metadata if get_origin(tp) in (Union, types.UnionType) else ()
    for arg in get_args(tp):
        yield from _lax_bools(arg, where, inherited, seen)


def _request_bodies() -> Iterator[tuple[str, Any]]:
    for router in ROUTERS:
        for route in router.routes:
            if isinstance(route, APIRoute) and route.body_field is not None:
                yield f"{sorted(route.methods or ())} {route.path}", route.body_field.field_info.annotation


def test_every_boolean_a_request_body_takes_is_strict() -> None:
    bodies = list(_request_bodies())
    assert len(bodies) > 20  # the walk found the API's bodies
    seen: set[type] = set()
    lax = [f"{route}: {where}" for route, tp in bodies for where in _lax_bools(tp, "body", (), seen)]
    assert lax == [], "\n".join(lax)


def _refused(response: Any) -> None:
    assert response.status_code == 422, (response.request.url, response.status_code, response.text)
    error = response.json()["error"]
    assert error["code"] == "validation_error" and error["fields"], error


def test_lax_booleans_are_refused_in_the_error_shape(admin: ApiClient) -> None:
    tool = admin.ok("POST", "/api/agent-tools", json={"slug": "calc", "name": "Calc", "type": "calculator"},
                    status=201)
    agent = admin.ok("POST", "/api/admin/agents", json={"slug": "strict", "name": "Strict"}, status=201)
    for value in LAX:
        _refused(admin.post("/api/agent-tools", json={"slug": "lax", "name": "Lax", "type": "calculator",
                                                      "needsApproval": value}))
        _refused(admin.put(f"/api/agent-tools/{tool['id']}", json={"enabled": value}))
        _refused(admin.put(f"/api/agent-tools/{tool['id']}", json={"adminOnly": value}))
        _refused(admin.put(f"/api/admin/agents/{agent['id']}", json={"enabled": value}))
        _refused(admin.put(f"/api/admin/agents/{agent['id']}/tools",
                           json=[{"toolId": tool["id"], "needsApproval": value}]))
        _refused(admin.put("/api/admin/settings", json={"signupOpen": value}))
    assert "lax" not in [t["slug"] for t in admin.ok("GET", "/api/agent-tools")["items"]]
    kept = admin.ok("GET", f"/api/agent-tools/{tool['id']}")
    assert kept["enabled"] is True and kept["adminOnly"] == tool["adminOnly"]
    assert admin.ok("GET", f"/api/admin/agents/{agent['id']}")["enabled"] is True
    assert admin.ok("GET", f"/api/admin/agents/{agent['id']}/tools")["items"] == []
    # JSON's own booleans, and null where a field may stay unset, still work.
    assert admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"enabled": False})["enabled"] is False
    links = [{"toolId": tool["id"], "needsApproval": None}]
    assert admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=links)["items"][0]["needsApproval"] is None
