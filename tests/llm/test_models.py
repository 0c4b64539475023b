"""Model configurations: admin CRUD, encrypted keys, the default, the test action, the bootstrap model."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
from pathlib import Path

from sqlalchemy import text

from agentloft.core import migrate
from agentloft.core.db import Database
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step
from tests.support import ApiClient, LiveApp, start_app


def _create(admin: ApiClient, **kw) -> dict:
    body = {"name": "Local", "provider": "openai", "baseUrl": "http://127.0.0.1:11434/v1", "model": "llama3"}
    body.update(kw)
    return admin.ok("POST", "/api/admin/models", json=body)


def test_crud_and_key_never_returned(app: LiveApp, admin: ApiClient) -> None:
    created = _create(admin, apiKey="sk-secret-value")
    assert created["hasApiKey"] is True and "apiKey" not in created
    assert created["isDefault"] is True  # the first enabled model becomes the default
    stored = app.sql("SELECT api_key_enc FROM model_configs")[0][0]
    assert stored and "sk-secret-value" not in stored
    got = admin.ok("GET", f"/api/admin/models/{created['id']}")
    assert got["hasApiKey"] is True and "sk-secret-value" not in str(got)
    updated = admin.ok("PUT", f"/api/admin/models/{created['id']}", json={"model": "llama3.2", "apiKey": ""})
    assert updated["model"] == "llama3.2" and updated["hasApiKey"] is False
    page = admin.ok("GET", "/api/admin/models")
    assert page["total"] == 1 and page["items"][0]["id"] == created["id"] and page["hasMore"] is False
    admin.ok("DELETE", f"/api/admin/models/{created['id']}", status=204)
    assert admin.get(f"/api/admin/models/{created['id']}").status_code == 404


def test_only_one_default(admin: ApiClient) -> None:
    a = _create(admin, name="A")
    b = _create(admin, name="B", isDefault=True)
    items = {m["id"]: m for m in admin.ok("GET", "/api/admin/models")["items"]}
    assert items[b["id"]]["isDefault"] and not items[a["id"]]["isDefault"]


def test_bad_input(admin: ApiClient) -> None:
    r = admin.post("/api/admin/models", json={"name": "", "provider": "cohere", "model": "x"})
    assert r.status_code == 422
    assert {"name", "provider"} <= set(r.json()["error"]["fields"])
    r = admin.post("/api/admin/models", json={"name": "x", "provider": "openai", "model": "m", "baseUrl": "not a url"})
    assert r.status_code == 422 and "baseUrl" in r.json()["error"]["fields"]
    r = admin.post("/api/admin/models", json={"name": "x", "provider": "openai", "model": "m", "bogus": 1})
    assert r.status_code == 422 and "bogus" in r.json()["error"]["fields"]


def test_test_action_success_and_provider_error(
    admin: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    m = _create(admin, baseUrl=fake_model_server.base_url, model="fake-model", apiKey="k")
    fake_model.push(Step(text="OK"))
    ok = admin.ok("POST", f"/api/admin/models/{m['id']}/test")
    assert ok["ok"] is True and ok["reply"] == "OK" and ok["latencyMs"] >= 0
    assert fake_model.requests[-1]["model"] == "fake-model"
    fake_model.push(Step(error_status=401, error_message="invalid api key provided"))
    bad = admin.ok("POST", f"/api/admin/models/{m['id']}/test")
    assert bad["ok"] is False and "invalid api key provided" in bad["error"]


def test_a_model_tested_with_activate_becomes_the_default_only_when_it_answers(
    app: LiveApp, admin: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """The setup page's Save and test: saved switched off, and switched on as the default only by a test
    that passed; a model that answered 404 (a wrong base URL) is left off and its error reads as words."""
    old = _create(admin, name="Old", baseUrl=fake_model_server.base_url, model="fake-model")
    new = _create(admin, name="New", baseUrl=fake_model_server.base_url, model="wrong", enabled=False)
    fake_model.push(Step(error_status=404, error_message="The model `wrong` does not exist"))
    bad = admin.ok("POST", f"/api/admin/models/{new['id']}/test", json={"activate": True})
    assert bad["ok"] is False
    assert bad["error"] == "The model answered with HTTP 404: The model `wrong` does not exist"
    rows = "SELECT name, enabled, is_default FROM model_configs ORDER BY id"
    assert app.sql(rows) == [("Old", 1, 1), ("New", 0, 0)]
    fake_model.push(Step(text="OK"))
    assert admin.ok("POST", f"/api/admin/models/{new['id']}/test", json={"activate": True})["ok"] is True
    assert app.sql(rows) == [("Old", 1, 0), ("New", 1, 1)]
    fake_model.push(Step(text="OK"))
    assert admin.ok("POST", f"/api/admin/models/{old['id']}/test")["ok"] is True  # a plain test changes nothing
    assert app.sql(rows) == [("Old", 1, 0), ("New", 1, 1)]
    r = admin.post(f"/api/admin/models/{old['id']}/test", json={"activate": "yes"})
    assert r.status_code == 422 and "activate" in r.json()["error"]["fields"]


def test_test_action_connection_refused(admin: ApiClient) -> None:
    m = _create(admin, baseUrl="http://127.0.0.1:9/v1")
    res = admin.ok("POST", f"/api/admin/models/{m['id']}/test")
    assert res["ok"] is False and res["error"]


def test_bootstrap_model_from_environment(tmp_path: Path, template_db: Path) -> None:
    live = start_app(
        tmp_path / "d", template_db, openai_base_url="http://127.0.0.1:11434/v1/", default_model="llama3.2",
        openai_api_key="sk-env",
    )
    try:
        with live.client() as c:
            c.ok("POST", "/api/auth/signup", json={"username": "root", "password": "password123"})
            items = c.ok("GET", "/api/admin/models")["items"]
            assert len(items) == 1
            m = items[0]
            assert m["baseUrl"] == "http://127.0.0.1:11434/v1" and m["model"] == "llama3.2"
            assert m["isDefault"] and m["enabled"] and m["hasApiKey"]
    finally:
        live.stop()
    # a restart does not duplicate it
    live = start_app(tmp_path / "d", None, openai_base_url="http://127.0.0.1:11434/v1", default_model="llama3.2")
    try:
        assert live.sql("SELECT count(*) FROM model_configs")[0][0] == 1
    finally:
        live.stop()


def test_presets_and_setup_status(admin: ApiClient, user: ApiClient) -> None:
    presets = {p["id"]: p for p in admin.ok("GET", "/api/admin/models/presets")["items"]}
    assert set(presets) == {"openai", "anthropic", "ollama", "vllm", "lmstudio", "openrouter", "deepseek"}
    assert presets["ollama"]["baseUrl"] == "http://127.0.0.1:11434/v1" and presets["ollama"]["needsApiKey"] is False
    assert presets["anthropic"]["provider"] == "anthropic" and presets["openai"]["needsApiKey"] is True
    assert presets["vllm"]["baseUrl"] == "http://127.0.0.1:8001/v1"  # 8000 is agentloft's own port
    assert user.get("/api/admin/models/presets").status_code == 403
    assert user.ok("GET", "/api/setup/status") == {"hasModel": False}
    _create(admin, enabled=False)
    assert user.ok("GET", "/api/setup/status") == {"hasModel": False}
    _create(admin, name="On")
    assert user.ok("GET", "/api/setup/status") == {"hasModel": True}


def test_vision_defaults_by_kind_and_is_editable(admin: ApiClient) -> None:
    local = _create(admin)  # an OpenAI-compatible server of the admin's: unknown model, text only
    assert local["vision"] is False
    assert _create(admin, name="OpenAI", baseUrl="https://api.openai.com/v1", model="gpt-4o")["vision"] is True
    assert _create(admin, name="Claude", provider="anthropic", baseUrl=None, model="claude-sonnet-4-5")["vision"]
    assert _create(admin, name="Said", vision=True)["vision"] is True
    updated = admin.ok("PUT", f"/api/admin/models/{local['id']}", json={"vision": True})
    assert updated["vision"] is True and admin.ok("GET", f"/api/admin/models/{local['id']}")["vision"] is True
    assert admin.post("/api/admin/models", json={"name": "x", "provider": "openai", "model": "m",
                                                 "vision": "yes"}).status_code == 422
    presets = {p["id"]: p["vision"] for p in admin.ok("GET", "/api/admin/models/presets")["items"]}
    assert presets["openai"] and presets["anthropic"] and not presets["ollama"] and not presets["vllm"]


async def _models_then_upgrade(url: str, rows: list[tuple[str, str, str, str | None]]) -> list[tuple[str, bool]]:
    db = Database(url)
    try:
        async with db.session() as s:
            for name, kind, provider, base_url in rows:
                await s.execute(text(
                    "INSERT INTO model_configs (name, kind, provider, base_url, model, enabled, is_default, "
                    "created_at, updated_at) VALUES (:n, :k, :p, :b, 'm', true, false, :t, :t)"),
                    {"n": name, "k": kind, "p": provider, "b": base_url, "t": datetime(2026, 1, 1, tzinfo=UTC)})
    finally:
        await db.dispose()
    await asyncio.to_thread(migrate.upgrade, url)
    db = Database(url)
    try:
        async with db.session() as s:
            got = await s.execute(text("SELECT name, vision FROM model_configs ORDER BY name"))
            return [(name, bool(vision)) for name, vision in got]
    finally:
        await db.dispose()


def test_the_migration_gives_existing_models_their_kinds_vision(blank_database_url: str) -> None:
    migrate.upgrade(blank_database_url, "0023_model_kind")
    rows = [("a", "chat", "anthropic", None), ("b", "chat", "openai", "https://api.openai.com/v1"),
            ("c", "chat", "openai", None), ("d", "chat", "openai", "http://127.0.0.1:11434/v1"),
            ("e", "embedding", "openai", "https://api.openai.com/v1")]
    assert asyncio.run(_models_then_upgrade(blank_database_url, rows)) == [
        ("a", True), ("b", True), ("c", True), ("d", False), ("e", False)]


def test_a_known_model_added_without_prices_gets_the_price_lists(admin: ApiClient) -> None:
    """Prices come from the genai-prices list (USD per million tokens) only for a model added with none, at
    an endpoint of a listed provider; the figures are the list's own, read here through its public API."""
    from genai_prices import Usage, calc_price

    def listed(model: str, url: str) -> tuple[float, float]:
        per = [calc_price(Usage(**{kind: 1000}), model, provider_api_url=url).total_price
               for kind in ("input_tokens", "output_tokens")]
        return float(per[0]) * 1000, float(per[1]) * 1000

    gpt = _create(admin, name="GPT", baseUrl=None, model="gpt-4o-mini")  # OpenAI's own endpoint by default
    assert (gpt["inputPricePerMTok"], gpt["outputPricePerMTok"]) == listed("gpt-4o-mini", "https://api.openai.com/v1")
    assert 0 < gpt["inputPricePerMTok"] < gpt["outputPricePerMTok"]
    claude = _create(admin, name="Claude", provider="anthropic", baseUrl=None, model="claude-sonnet-4-5")
    assert (claude["inputPricePerMTok"], claude["outputPricePerMTok"]) == listed(
        "claude-sonnet-4-5", "https://api.anthropic.com")
    # A model of that name served by the admin's own server costs nothing the list knows of.
    local = _create(admin, name="Local GPT", model="gpt-4o-mini")
    assert local["inputPricePerMTok"] is None and local["outputPricePerMTok"] is None
    unknown = _create(admin, name="Unknown", baseUrl="https://api.openai.com/v1", model="no-such-model")
    assert unknown["inputPricePerMTok"] is None
    # What the admin says wins: their prices, or unknown on purpose; an update never reprices.
    said = _create(admin, name="Said", baseUrl=None, model="gpt-4o-mini", inputPricePerMTok=1, outputPricePerMTok=2)
    assert (said["inputPricePerMTok"], said["outputPricePerMTok"]) == (1, 2)
    cleared = _create(admin, name="Cleared", baseUrl=None, model="gpt-4o-mini", inputPricePerMTok=None)
    assert cleared["inputPricePerMTok"] is None and cleared["outputPricePerMTok"] is None
    moved = admin.ok("PUT", f"/api/admin/models/{local['id']}", json={"baseUrl": "https://api.openai.com/v1"})
    assert moved["inputPricePerMTok"] is None
