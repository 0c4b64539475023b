"""Request bodies have a size limit. Without one, a body of any size was read into memory before anything
was checked, even from a client that had not signed in."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx

from agentloft.app import MAX_BODY_BYTES
from tests.support import ApiClient, LiveApp

JSON = {"content-type": "application/json"}


def _chunks(total: int) -> Iterator[bytes]:
    """A body sent in chunks, with no Content-Length to refuse it by."""
    yield b'{"username": "admin", "password": "'
    chunk = b"x" * (1024 * 1024)
    for _ in range(total // len(chunk) + 1):
        yield chunk
    yield b'"}'


def _assert_too_large(r: httpx.Response) -> None:
    assert r.status_code == 413, r.text[:200]
    assert r.headers["content-type"] == "application/json"
    assert r.json()["error"]["code"] == "payload_too_large"


def test_a_body_past_the_limit_is_a_413(anon: ApiClient) -> None:
    """Sent in chunks, the body is cut off where it passes the limit; with a Content-Length past it,
    nothing is read. Either way the answer is a 413 in the one error shape."""
    _assert_too_large(anon.post("/api/auth/login", content=_chunks(MAX_BODY_BYTES), headers=JSON))
    body = b'{"username": "admin", "password": "' + b"x" * MAX_BODY_BYTES + b'"}'
    _assert_too_large(anon.post("/api/auth/login", content=body, headers=JSON))


def test_a_declared_length_past_the_limit_is_refused_before_anything_runs(app: LiveApp) -> None:
    """Only the header is past the limit (the body never comes): refused at once, on routes that would
    refuse the caller for another reason, on unknown paths, and on the A2A server, which reads its own
    body; the connection does not wait for a body that will not be read."""
    where = httpx.URL(app.url)
    for path in ("/api/auth/login", "/api/documents", "/no/such/path", "/a2a/anyone/"):
        with socket.create_connection((where.host, where.port or 80), timeout=10) as sock:
            head = [f"POST {path} HTTP/1.1", f"Host: {where.host}", "Connection: close",
                    "Content-Type: application/json", f"Content-Length: {MAX_BODY_BYTES + 1}"]
            sock.sendall(("\r\n".join(head) + "\r\n\r\n").encode())
            reply = b""
            while chunk := sock.recv(65536):
                reply += chunk
        status, _, rest = reply.partition(b"\r\n")
        assert status.split()[1] == b"413", (path, reply[:300])
        assert b"content-type: application/json" in rest.lower(), (path, reply[:300])
        assert b"x-content-type-options: nosniff" in rest.lower(), "the security headers are on it too"
        assert json.loads(rest.partition(b"\r\n\r\n")[2])["error"]["code"] == "payload_too_large", path


def test_the_largest_field_fits(admin: ApiClient) -> None:
    """A markdown preview at its 1M-character limit, every character JSON-escaped (6 bytes each)."""
    text = "\u00e9" * 1_000_000
    body = ('{"text": "' + "\\u00e9" * 1_000_000 + '"}').encode()
    assert len(body) < MAX_BODY_BYTES
    r = admin.post("/api/render/markdown", content=body, headers=JSON)
    assert r.status_code == 200, r.text[:200]
    assert text in r.json()["html"]
