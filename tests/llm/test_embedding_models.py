"""Embedding models: the ``kind`` of a model row through the admin API, what an embedding model may not be,
where it is never offered (the default, an agent), its Test over ``/v1/embeddings``, and the admin setting
that picks the model knowledge search uses."""

from __future__ import annotations

from typing import Any

from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, free_port
from tests.support import ApiClient, LiveApp


def _model(admin: ApiClient, name: str, base_url: str, kind: str = "embedding", **kw: Any) -> dict[str, Any]:
    body = {"name": name, "kind": kind, "provider": "openai", "baseUrl": base_url, "model": f"{name}-m", **kw}
    return admin.ok("POST", "/api/admin/models", json=body)


def _field(response: Any) -> dict[str, Any]:
    assert response.status_code == 422, response.text
    return response.json()["error"]["fieldCodes"]


def test_kind_is_kept_and_read_back(admin: ApiClient, fake_model_server: FakeModelServer) -> None:
    chat = admin.ok("POST", "/api/admin/models", json={"name": "Chat", "provider": "openai", "model": "c"})
    emb = _model(admin, "Emb", fake_model_server.base_url)
    assert chat["kind"] == "chat" and emb["kind"] == "embedding"
    assert admin.ok("GET", f"/api/admin/models/{emb['id']}")["kind"] == "embedding"
    only = admin.ok("GET", "/api/admin/models", params={"kind": "embedding"})
    assert [m["id"] for m in only["items"]] == [emb["id"]] and only["total"] == 1
    assert [m["id"] for m in admin.ok("GET", "/api/admin/models", params={"kind": "chat"})["items"]] == [chat["id"]]
    renamed = admin.ok("PUT", f"/api/admin/models/{emb['id']}", json={"name": "Emb 2", "kind": "embedding"})
    assert renamed["name"] == "Emb 2" and renamed["kind"] == "embedding"


def test_bad_kind_and_what_an_embedding_model_cannot_be(admin: ApiClient) -> None:
    base = {"name": "E", "provider": "openai", "model": "m"}
    assert _field(admin.post("/api/admin/models", json={**base, "kind": "rerank"}))["kind"]["code"] == "literal_error"
    anthropic = admin.post("/api/admin/models", json={**base, "kind": "embedding", "provider": "anthropic"})
    assert _field(anthropic)["provider"]["code"] == "openai_compatible_only"
    default = admin.post("/api/admin/models", json={**base, "kind": "embedding", "isDefault": True})
    assert _field(default)["isDefault"]["code"] == "chat_model_only"
    assert admin.ok("GET", "/api/admin/models")["total"] == 0  # nothing half-written
    emb = admin.ok("POST", "/api/admin/models", json={**base, "kind": "embedding"})
    for change in ({"kind": "chat"}, {"isDefault": True}, {"provider": "anthropic", "apiKey": "k"}):
        assert _field(admin.put(f"/api/admin/models/{emb['id']}", json=change))
    assert admin.ok("GET", f"/api/admin/models/{emb['id']}")["provider"] == "openai"


def test_an_embedding_model_is_never_the_chat_model(admin: ApiClient, user: ApiClient) -> None:
    emb = admin.ok("POST", "/api/admin/models", json={"name": "E", "kind": "embedding", "provider": "openai",
                                                     "model": "m"})
    assert emb["isDefault"] is False  # the first model added, yet not the default
    assert user.ok("GET", "/api/setup/status")["hasModel"] is False  # nobody can chat on it
    agent = {"name": "A", "slug": "a", "systemPrompt": "x", "modelId": emb["id"]}
    assert _field(admin.post("/api/admin/agents", json=agent))["modelId"]["code"] == "chat_model_only"
    chat = admin.ok("POST", "/api/admin/models", json={"name": "C", "provider": "openai", "model": "c"})
    assert chat["isDefault"] is True and user.ok("GET", "/api/setup/status")["hasModel"] is True


def test_the_test_button_embeds_over_http(admin: ApiClient, fake_model_server: FakeModelServer,
                                          fake_model: FakeModel) -> None:
    emb = _model(admin, "Emb", fake_model_server.base_url, apiKey="sk-e")
    ok = admin.ok("POST", f"/api/admin/models/{emb['id']}/test")
    assert ok["ok"] is True and ok["dimensions"] == 256 and ok["error"] is None
    assert fake_model.embedding_requests[-1] == {"model": "Emb-m", "input": ["OK"], "encoding_format": "float"}
    assert fake_model.requests == []  # no chat completion was asked for
    fake_model.push_embedding(Step(error_status=401, error_message="invalid api key provided"))
    bad = admin.ok("POST", f"/api/admin/models/{emb['id']}/test")
    assert bad["ok"] is False and bad["error"] == "The model answered with HTTP 401: invalid api key provided"


def test_the_test_button_words_an_unreachable_server_like_a_chat_model(admin: ApiClient) -> None:
    emb = _model(admin, "Gone", f"http://127.0.0.1:{free_port()}/v1")
    bad = admin.ok("POST", f"/api/admin/models/{emb['id']}/test")
    assert bad["ok"] is False and bad["error"] == "The model could not be reached (connection failed)."


def test_activating_an_embedding_model_never_makes_it_the_default(
    admin: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    emb = _model(admin, "Emb", fake_model_server.base_url, enabled=False)
    assert admin.ok("POST", f"/api/admin/models/{emb['id']}/test", json={"activate": True})["ok"] is True
    got = admin.ok("GET", f"/api/admin/models/{emb['id']}")
    assert got["enabled"] is True and got["isDefault"] is False


def test_the_embedding_model_setting(app: LiveApp, admin: ApiClient, user: ApiClient,
                                     fake_model_server: FakeModelServer) -> None:
    assert admin.ok("GET", "/api/admin/settings")["embeddingModelId"] is None
    emb = _model(admin, "Emb", fake_model_server.base_url)
    chat = admin.ok("POST", "/api/admin/models", json={"name": "C", "provider": "openai", "model": "c"})
    chosen = admin.ok("PUT", "/api/admin/settings", json={"embeddingModelId": emb["id"]})
    assert chosen["embeddingModelId"] == emb["id"]
    assert admin.ok("PUT", "/api/admin/settings", json={"signupOpen": False})["embeddingModelId"] == emb["id"]
    put = admin.put
    assert _field(put("/api/admin/settings", json={"embeddingModelId": chat["id"]}))["embeddingModelId"]["code"] \
        == "embedding_model_only"
    assert _field(put("/api/admin/settings", json={"embeddingModelId": 999}))["embeddingModelId"]["code"] \
        == "no_such_model"
    assert _field(put("/api/admin/settings", json={"embeddingModelId": str(emb["id"])}))["embeddingModelId"]
    assert user.put("/api/admin/settings", json={"embeddingModelId": None}).status_code == 403
    assert admin.ok("GET", "/api/admin/settings")["embeddingModelId"] == emb["id"]
    assert admin.ok("PUT", "/api/admin/settings", json={"embeddingModelId": None})["embeddingModelId"] is None
    assert app.sql("SELECT value FROM app_settings WHERE key = 'embedding_model_id'") == [("null",)]
