"""Helpers for the knowledge tests: upload a text file, make a collection, wait for indexing."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import wait_for
from tests.support import ApiClient

BASE = "/api/knowledge"


def upload(client: ApiClient, name: str, text: str) -> str:
    resp = client.post("/api/files", files={"file": (name, text.encode(), "text/plain")})
    assert resp.status_code == 201, resp.text
    return resp.json()["id"]


def collection(client: ApiClient, name: str = "Handbook", description: str = "") -> dict[str, Any]:
    return client.ok("POST", BASE, json={"name": name, "description": description}, status=201)


def add(client: ApiClient, collection_id: str, file_id: str, status: int = 202) -> Any:
    resp = client.post(f"{BASE}/{collection_id}/files", json={"fileId": file_id})
    assert resp.status_code == status, resp.text
    return resp.json()


def settled(client: ApiClient, collection_id: str) -> dict[str, Any]:
    """The collection once no file of it is being indexed."""
    return wait_for(lambda: (c := client.ok("GET", f"{BASE}/{collection_id}"))["status"] == "ready" and c)


def indexed(client: ApiClient, *texts: tuple[str, str], name: str = "Handbook") -> str:
    """A collection holding the given (file name, text) files, all indexed; its id."""
    kb = collection(client, name)["id"]
    for file_name, text in texts:
        add(client, kb, upload(client, file_name, text))
    settled(client, kb)
    return kb


def search(client: ApiClient, collection_id: str, q: str, top_k: int = 5) -> dict[str, Any]:
    return client.ok("GET", f"{BASE}/{collection_id}/search", params={"q": q, "topK": top_k})
