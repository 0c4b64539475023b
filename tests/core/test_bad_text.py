"""Text no database can store is the client's error, not ours. PostgreSQL refuses the NUL character in text,
and both drivers refuse to encode a lone UTF-16 surrogate (JSON's ``"\\udfff"`` decodes to one): each was a
500, in any text field of any write, a sign-in's username, or a search. Now a 422 with nothing written."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.support import ApiClient

NUL = "a\x00b"
SURROGATE = "a\udfffb"


def _send(client: ApiClient, method: str, url: str, body: dict[str, Any]) -> Any:
    """JSON with every non-ASCII character escaped, as browsers may send it: a lone surrogate cannot be
    sent as UTF-8 (httpx's own ``json=`` would fail to encode it), only as ``\\udfff``."""
    content = json.dumps(body).encode()
    return client.request(method, url, content=content, headers={"content-type": "application/json"})


def _writes(admin: ApiClient, bad: str) -> list[Callable[[], Any]]:
    """One request per kind of write, each with ``bad`` in a text field."""
    doc = admin.ok("POST", "/api/agent-documents", json={"title": "Kept", "content": "kept"}, status=201)
    return [
        lambda: _send(admin, "POST", "/api/admin/agents", {"slug": "bad", "name": "Bad", "systemPrompt": bad}),
        lambda: _send(admin, "POST", "/api/agent-tools", {"slug": "bad", "name": bad, "type": "calculator"}),
        lambda: _send(admin, "POST", "/api/agent-documents", {"title": "Bad", "content": bad}),
        lambda: _send(admin, "PUT", f"/api/agent-documents/{doc['id']}", {"content": bad}),
        lambda: _send(admin, "POST", "/api/auth/tokens", {"name": bad}),
        lambda: _send(admin, "POST", "/api/auth/login", {"username": bad, "password": "password123"}),
    ]


def _nothing_written(admin: ApiClient) -> None:
    assert "bad" not in [a["slug"] for a in admin.ok("GET", "/api/admin/agents")["items"]]
    assert "bad" not in [t["slug"] for t in admin.ok("GET", "/api/agent-tools")["items"]]
    docs = admin.ok("GET", "/api/agent-documents")["items"]
    assert [d["title"] for d in docs] == ["Kept"]
    assert admin.ok("GET", f"/api/agent-documents/{docs[0]['id']}")["content"] == "kept"
    assert admin.ok("GET", "/api/auth/tokens")["items"] == []


def _refused(response: Any) -> None:
    assert response.status_code == 422, (response.request.url, response.status_code, response.text)
    assert response.json()["error"]["code"] == "validation_error"


def test_a_lone_surrogate_is_a_422(admin: ApiClient) -> None:
    for write in _writes(admin, SURROGATE):
        _refused(write())
    _nothing_written(admin)


def test_nul_is_a_422_on_every_database(admin: ApiClient) -> None:
    """PostgreSQL refuses it; SQLite, which would store it, refuses it the same way (the two databases
    differed: the same request was saved on one and refused on the other)."""
    for write in _writes(admin, NUL):
        _refused(write())
    _nothing_written(admin)


def test_a_search_with_nul(admin: ApiClient) -> None:
    """SQLite's full-text MATCH ended at the NUL ("unterminated string"); it now splits the terms."""
    admin.ok("POST", "/api/agent-documents", json={"title": "Weather", "content": "sunny tomorrow"}, status=201)
    for q in ("sunny\x00tomorrow", "\x00", "sun\x00"):
        assert admin.get("/api/agent-documents", params={"q": q}).status_code == 200
    found = admin.ok("GET", "/api/agent-documents", params={"q": "sunny\x00tomorrow"})["items"]
    assert [d["title"] for d in found] == ["Weather"]
