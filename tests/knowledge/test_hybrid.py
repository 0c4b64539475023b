"""Hybrid knowledge search over real HTTP with the fake embedding server: chunks embedded in the background
after indexing, a vector ranking fused with the lexical one, everything embedded again when the admin
picks another model or edits the chosen one, and a failing or missing model making search lexical
instead of failing it."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from agentloft.knowledge import embedding
from tests.chat.helpers import wait_for
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step
from tests.knowledge.helpers import BASE, add, indexed, search, settled, upload
from tests.support import ApiClient, LiveApp

OPS = ("# Backups\n\nBackups are rotated nightly by the archivist.\n\n"
       "# Office\n\nThe office opens at nine and closes at six.\n\n"
       "# 会议\n\n每周一上午十点在三楼会议室开例会。")
MISSED_BY_WORDS = "rotation of backup archives"  # no word in common with the Backups chunk


def _embedding_model(admin: ApiClient, server: FakeModelServer, name: str = "Emb") -> int:
    body = {"name": name, "kind": "embedding", "provider": "openai", "baseUrl": server.base_url, "model": name}
    return admin.ok("POST", "/api/admin/models", json=body)["id"]


def _choose(admin: ApiClient, model_id: int | None) -> None:
    admin.ok("PUT", "/api/admin/settings", json={"embeddingModelId": model_id})


def _vectors(app: LiveApp) -> list[tuple[Any, ...]]:
    return app.sql("SELECT chunk_id, model_id, dim FROM knowledge_vectors ORDER BY chunk_id")


def _embedded(app: LiveApp, model_id: int) -> list[tuple[Any, ...]]:
    """The vectors once every chunk has one of ``model_id``."""
    chunks = app.sql("SELECT count(*) FROM knowledge_chunks")[0][0]
    return wait_for(lambda: (v := _vectors(app)) and len(v) == chunks and all(r[1] == model_id for r in v) and v)


def test_hybrid_search_finds_what_words_alone_miss(app: LiveApp, admin: ApiClient, user: ApiClient,
                                                   fake_model_server: FakeModelServer, fake_model: FakeModel) -> None:
    kb = indexed(user, ("ops.md", OPS))
    lexical = search(user, kb, MISSED_BY_WORDS)
    assert lexical == {"items": [], "mode": "lexical"}
    assert fake_model.embedding_requests == []  # no model: nothing is embedded
    emb = _embedding_model(admin, fake_model_server)
    _choose(admin, emb)  # the chunks indexed before are embedded now, in the background
    assert {dim for _, _, dim in _embedded(app, emb)} == {256}
    found = search(user, kb, MISSED_BY_WORDS)
    assert found["mode"] == "hybrid"
    assert found["items"][0]["text"].startswith("Backups\n\nBackups are rotated nightly")
    assert fake_model.embedding_requests[-1] == {"model": "Emb", "input": [MISSED_BY_WORDS],
                                                 "encoding_format": "float"}
    both = search(user, kb, "会议室", top_k=1)  # a two-character Chinese term, both rankings agree
    assert both["mode"] == "hybrid" and "三楼会议室" in both["items"][0]["text"]


def test_a_file_added_later_is_embedded_after_its_indexing(app: LiveApp, admin: ApiClient, user: ApiClient,
                                                           fake_model_server: FakeModelServer,
                                                           fake_model: FakeModel) -> None:
    emb = _embedding_model(admin, fake_model_server)
    _choose(admin, emb)
    kb = indexed(user, ("ops.md", OPS))
    vectors = _embedded(app, emb)
    assert len(vectors) == 3
    assert wait_for(lambda: app.sql("SELECT status FROM jobs WHERE kind = 'knowledge.embed'") == [("done",)])
    file_id = user.ok("GET", f"{BASE}/{kb}")["files"][0]["id"]
    user.ok("DELETE", f"{BASE}/{kb}/files/{file_id}", status=204)
    assert _vectors(app) == []  # gone with their chunks


def test_choosing_or_editing_the_model_embeds_everything_again(app: LiveApp, admin: ApiClient, user: ApiClient,
                                                               fake_model_server: FakeModelServer,
                                                               fake_model: FakeModel) -> None:
    first = _embedding_model(admin, fake_model_server, "First")
    second = _embedding_model(admin, fake_model_server, "Second")
    _choose(admin, first)
    kb = indexed(user, ("ops.md", OPS))
    _embedded(app, first)
    _choose(admin, second)
    _embedded(app, second)
    assert {r["model"] for r in fake_model.embedding_requests} == {"First", "Second"}
    assert search(user, kb, MISSED_BY_WORDS)["mode"] == "hybrid"
    _choose(admin, second)  # the same model again: nothing to do
    assert app.sql("SELECT count(*) FROM jobs WHERE kind = 'knowledge.reembed'") == [(2,)]
    fake_model.embedding_requests.clear()
    admin.ok("PUT", f"/api/admin/models/{second}", json={"model": "second-v2"})  # other vectors now
    _embedded(app, second)
    assert {r["model"] for r in fake_model.embedding_requests} == {"second-v2"}
    admin.ok("PUT", f"/api/admin/models/{second}", json={"apiKey": "sk-new"})  # same vectors: kept
    assert app.sql("SELECT count(*) FROM jobs WHERE kind = 'knowledge.reembed'") == [(3,)]


def test_a_failing_embedding_server_makes_search_lexical(app: LiveApp, admin: ApiClient, user: ApiClient,
                                                         fake_model_server: FakeModelServer, fake_model: FakeModel,
                                                         caplog: pytest.LogCaptureFixture) -> None:
    emb = _embedding_model(admin, fake_model_server)
    _choose(admin, emb)
    kb = indexed(user, ("ops.md", OPS))
    _embedded(app, emb)
    fake_model.push_embedding(*[Step(error_status=500, error_message="embedding backend down")] * 3)
    with caplog.at_level(logging.WARNING, logger="agentloft.knowledge.embedding"):
        found = search(user, kb, "when are backups rotated")
    assert found["mode"] == "lexical" and found["items"][0]["text"].startswith("Backups")
    assert "The model answered with HTTP 500: embedding backend down" in caplog.text
    asked = len(fake_model.embedding_requests)  # the first try and the SDK's two retries
    assert search(user, kb, "office")["mode"] == "lexical"  # not asked again for a while
    assert len(fake_model.embedding_requests) == asked


def test_a_silent_embedding_server_costs_a_search_its_query_timeout_only(
    app: LiveApp, admin: ApiClient, user: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embedding, "QUERY_TIMEOUT_S", 0.5)  # the app runs in this process (tests.support)
    monkeypatch.setattr(embedding, "DOWN_S", 0.5)
    emb = _embedding_model(admin, fake_model_server)
    _choose(admin, emb)
    kb = indexed(user, ("ops.md", OPS))
    _embedded(app, emb)
    fake_model.push_embedding(Step(hang=True))
    started = time.monotonic()
    found = search(user, kb, "backups")
    assert found["mode"] == "lexical" and found["items"] and time.monotonic() - started < 5
    assert wait_for(lambda: search(user, kb, "backups")["mode"] == "hybrid")  # asked again after a while


def test_a_file_indexed_while_the_embedding_server_fails_is_still_found(
    app: LiveApp, admin: ApiClient, user: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    emb = _embedding_model(admin, fake_model_server)
    _choose(admin, emb)
    fake_model.push_embedding(*[Step(error_status=503, error_message="loading")] * 3)
    kb = indexed(user, ("ops.md", OPS))
    assert settled(user, kb)["files"][0]["status"] == "ready"
    job = wait_for(lambda: app.sql("SELECT status, error FROM jobs WHERE kind = 'knowledge.embed' "
                                   "AND error IS NOT NULL"))
    assert job[0][0] in ("queued", "running") and "503" in job[0][1]  # tried again later
    assert search(user, kb, "backups")["items"][0]["text"].startswith("Backups")


def test_without_a_usable_model_search_is_lexical(app: LiveApp, admin: ApiClient, user: ApiClient,
                                                  fake_model_server: FakeModelServer, fake_model: FakeModel) -> None:
    emb = _embedding_model(admin, fake_model_server)
    _choose(admin, emb)
    kb = indexed(user, ("ops.md", OPS))
    _embedded(app, emb)
    admin.ok("PUT", f"/api/admin/models/{emb}", json={"enabled": False})
    assert search(user, kb, "backups")["mode"] == "lexical"
    admin.ok("PUT", f"/api/admin/models/{emb}", json={"enabled": True})
    assert search(user, kb, "backups")["mode"] == "hybrid"
    _choose(admin, None)
    assert search(user, kb, "backups")["mode"] == "lexical"
    _choose(admin, emb)
    admin.ok("DELETE", f"/api/admin/models/{emb}", status=204)
    assert search(user, kb, "backups")["mode"] == "lexical" and _vectors(app) == []
    other = upload(user, "more.md", "More text about backups.")
    add(user, kb, other)
    settled(user, kb)
    assert app.sql("SELECT count(*) FROM jobs WHERE kind = 'knowledge.embed' AND CAST(payload AS TEXT) LIKE ?",
                   (f"%{other}%",)) == [(0,)]  # nothing to embed with


def test_embeddings_count_for_the_collections_owner_and_the_searching_user(
    app: LiveApp, admin: ApiClient, user: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    emb = _embedding_model(admin, fake_model_server)
    _choose(admin, emb)
    kb = indexed(user, ("ops.md", OPS))
    _embedded(app, emb)
    usage = "SELECT u.username, r.source, r.model_id, r.input_tokens, r.output_tokens FROM usage_records r " \
            "JOIN users u ON u.id = r.user_id ORDER BY r.id"
    indexing = wait_for(lambda: app.sql(usage))
    assert [r[:3] for r in indexing] == [("alice", "knowledge", emb)] and indexing[0][3] > 0 == indexing[0][4]
    search(user, kb, MISSED_BY_WORDS)
    [*_, query] = app.sql(usage)
    assert query[:3] == ("alice", "knowledge", emb) and query[3] == len(MISSED_BY_WORDS.split())
