"""Request bodies have a size limit. Without one, a body of any size was read into memory before anything
was checked, even from a client that had not signed in."""

from __future__ import annotations

from collections.abc import Iterator

from agentloft.app import MAX_BODY_BYTES
from tests.support import ApiClient

JSON = {"content-type": "application/json"}


def _chunks(total: int) -> Iterator[bytes]:
    """A body sent in chunks, with no Content-Length to refuse it by."""
    yield b'{"username": "admin", "password": "'
    chunk = b"x" * (1024 * 1024)
    for _ in range(total // len(chunk) + 1):
        yield chunk
    yield b'"}'


def test_a_body_past_the_limit_is_a_413(anon: ApiClient) -> None:
    """Sent in chunks, the body is cut off where it passes the limit, in the one error shape. With a
    Content-Length past it, nothing is read; Starlette's limiter then answers in plain text."""
    r = anon.post("/api/auth/login", content=_chunks(MAX_BODY_BYTES), headers=JSON)
    assert r.status_code == 413, r.text
    assert r.json()["error"]["code"] == "payload_too_large"
    body = b'{"username": "admin", "password": "' + b"x" * MAX_BODY_BYTES + b'"}'
    assert anon.post("/api/auth/login", content=body, headers=JSON).status_code == 413


def test_the_largest_field_fits(admin: ApiClient) -> None:
    """A markdown preview at its 1M-character limit, every character JSON-escaped (6 bytes each)."""
    text = "\u00e9" * 1_000_000
    body = ('{"text": "' + "\\u00e9" * 1_000_000 + '"}').encode()
    assert len(body) < MAX_BODY_BYTES
    r = admin.post("/api/render/markdown", content=body, headers=JSON)
    assert r.status_code == 200, r.text[:200]
    assert text in r.json()["html"]
