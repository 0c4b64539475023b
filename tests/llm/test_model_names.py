"""A model's name is unique, like an agent's or a tool's slug: the pickers show models by name. A taken
name is a 409 ``model_name_taken``, on create and on rename, also when requests race (the database's
unique index decides); migration 0013 renames the duplicates an older install may have."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from sqlalchemy import insert, text
from sqlalchemy.exc import IntegrityError

from agentloft.core import migrate
from agentloft.core.db import Database
from agentloft.llm.models import ModelConfig
from tests.support import ApiClient, LiveApp

BODY = {"provider": "openai", "baseUrl": "http://127.0.0.1:9/v1", "model": "m"}


def _taken(response: httpx.Response) -> None:
    assert response.status_code == 409, response.text
    assert response.json()["error"]["code"] == "model_name_taken"


def test_a_taken_name_is_a_409(admin: ApiClient) -> None:
    first = admin.ok("POST", "/api/admin/models", json={**BODY, "name": "Fast"})
    _taken(admin.post("/api/admin/models", json={**BODY, "name": "Fast"}))
    other = admin.ok("POST", "/api/admin/models", json={**BODY, "name": "Slow"})
    _taken(admin.put(f"/api/admin/models/{other['id']}", json={"name": "Fast"}))
    assert admin.ok("PUT", f"/api/admin/models/{first['id']}", json={"name": "Fast", "model": "m2"})["model"] == "m2"
    assert admin.ok("PUT", f"/api/admin/models/{other['id']}", json={"name": "fast"})["name"] == "fast"
    names = [m["name"] for m in admin.ok("GET", "/api/admin/models")["items"]]
    assert names == ["Fast", "fast"]


async def _race(base: str, cookies: httpx.Cookies, headers: dict[str, str], n: int) -> list[httpx.Response]:
    async with httpx.AsyncClient(base_url=base, cookies=cookies, headers=headers, timeout=30) as client:
        return await asyncio.gather(*(client.post("/api/admin/models", json={**BODY, "name": "Twin"})
                                      for _ in range(n)))


def test_racing_creates_make_one_model(app: LiveApp, admin: ApiClient) -> None:
    """Requests that all pass the service's look-up before any has written: the unique index turns the
    losers' writes into the same 409, not a 500 and not a second model."""
    csrf = {"X-CSRF-Token": admin.cookies.get("agentloft_csrf") or ""}
    responses = asyncio.run(_race(app.url, admin.cookies, csrf, 8))
    assert sorted(r.status_code for r in responses) == [201] + [409] * 7, [r.text for r in responses]
    for r in responses:
        if r.status_code == 409:
            _taken(r)
    assert app.sql("SELECT count(*) FROM model_configs WHERE name = 'Twin'") == [(1,)]


# --- migration 0013 -----------------------------------------------------------------------------------

BEFORE = "0011_user_grams"
T0 = datetime(2026, 1, 1, tzinfo=UTC)
ROWS = [(1, "GPT"), (2, "Claude"), (3, "GPT"), (4, "GPT (3)"), (5, "GPT"), (6, "Claude"), (7, "x" * 100),
        (8, "x" * 100)]
AFTER = [(1, "GPT"), (2, "Claude"), (3, "GPT (3-2)"), (4, "GPT (3)"), (5, "GPT (5)"), (6, "Claude (6)"),
         (7, "x" * 100), (8, "x" * 96 + " (8)")]


async def _fill_and_read(url: str) -> list[Any]:
    db = Database(url)
    try:
        async with db.session() as s:
            await s.execute(insert(ModelConfig), [
                {"id": row_id, "name": name, "provider": "openai", "model": "m", "enabled": True,
                 "is_default": False, "created_at": T0, "updated_at": T0} for row_id, name in ROWS])
    finally:
        await db.dispose()
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url)
    try:
        async with db.session() as s:
            rows = [tuple(r) for r in await s.execute(text("SELECT id, name FROM model_configs ORDER BY id"))]
        with pytest.raises(IntegrityError):
            async with db.session() as s:
                await s.execute(text("UPDATE model_configs SET name = 'GPT' WHERE id = 2"))
        return rows
    finally:
        await db.dispose()


def test_the_migration_renames_duplicates(blank_database_url: str) -> None:
    """The oldest of each name keeps it; the others get their id appended, cut to fit the column, and never
    a name another row has; then the unique index holds."""
    migrate.upgrade(blank_database_url, BEFORE)
    assert asyncio.run(_fill_and_read(blank_database_url)) == AFTER
