"""Writes that race each other end in a 409 for the loser, never a 500: an update of a row another request
deletes meanwhile (SQLAlchemy's ``StaleDataError``), two replacements of an agent's tool list (PostgreSQL's
unique index on the links), two first writes of an instance setting (its primary key)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

from tests.support import ApiClient

Request = Callable[[httpx.AsyncClient, int], Awaitable[httpx.Response]]


def _at_once(admin: ApiClient, n: int, request: Request) -> list[httpx.Response]:
    """Send ``n`` requests as the admin at the same time, each on its own connection."""

    async def run() -> list[httpx.Response]:
        headers = {"X-CSRF-Token": admin.cookies["agentloft_csrf"]}
        clients = [httpx.AsyncClient(base_url=str(admin.base_url), cookies=admin.cookies, headers=headers,
                                     timeout=60) for _ in range(n)]
        try:
            return list(await asyncio.gather(*(request(c, i) for i, c in enumerate(clients))))
        finally:
            await asyncio.gather(*(c.aclose() for c in clients))

    return asyncio.run(run())


def _statuses(responses: list[httpx.Response], allowed: set[int]) -> list[int]:
    for r in responses:
        assert r.status_code in allowed, (r.request.method, r.request.url, r.status_code, r.text)
        if r.status_code >= 400:
            assert r.json()["error"]["code"], r.text
    return [r.status_code for r in responses]


def _update_or_delete(url: str, field: str) -> Request:
    """Every third request deletes the row at ``url``, the others change its ``field``."""

    async def write(c: httpx.AsyncClient, i: int) -> httpx.Response:
        return await (c.delete(url) if i % 3 == 0 else c.put(url, json={field: f"v{i}"}))

    return write


def test_updates_racing_a_delete(admin: ApiClient) -> None:
    for attempt in range(3):
        agent: dict[str, Any] = admin.ok("POST", "/api/admin/agents", json={"slug": f"a{attempt}", "name": "A"},
                                         status=201)
        doc: dict[str, Any] = admin.ok("POST", "/api/agent-documents", json={"title": "d", "content": "c"},
                                       status=201)

        _statuses(_at_once(admin, 9, _update_or_delete(f"/api/admin/agents/{agent['id']}", "name")),
                  {200, 204, 404, 409})
        _statuses(_at_once(admin, 10, _update_or_delete(f"/api/agent-documents/{doc['id']}", "content")),
                  {200, 204, 404, 409})


def test_tool_lists_replaced_at_once(admin: ApiClient) -> None:
    agent = admin.ok("POST", "/api/admin/agents", json={"slug": "many", "name": "Many"}, status=201)
    tools = [
        admin.ok("POST", "/api/agent-tools", json={"slug": f"calc{i}", "name": "Calc", "type": "calculator"},
                 status=201)["id"]
        for i in range(3)
    ]

    async def replace(c: httpx.AsyncClient, i: int) -> httpx.Response:
        links = [{"toolId": t} for t in tools[: i % 3 + 1]]
        return await c.put(f"/api/admin/agents/{agent['id']}/tools", json=links)

    statuses = _statuses(_at_once(admin, 12, replace), {200, 409})
    assert 200 in statuses
    stored = admin.ok("GET", f"/api/admin/agents/{agent['id']}/tools")["items"]
    assert 1 <= len(stored) <= 3 and len({link["toolId"] for link in stored}) == len(stored)


def test_first_settings_written_at_once(admin: ApiClient) -> None:
    async def write(c: httpx.AsyncClient, i: int) -> httpx.Response:
        return await c.put("/api/admin/settings", json={"signupOpen": bool(i % 2),
                                                         "allowedInternalHosts": [f"10.0.0.{i}"]})

    statuses = _statuses(_at_once(admin, 10, write), {200, 409})
    assert 200 in statuses
    stored = admin.ok("GET", "/api/admin/settings")
    assert stored["allowedInternalHosts"][0].startswith("10.0.0.")
