"""CSRF over real HTTP: every unsafe method that carries the session cookie needs the ``X-CSRF-Token``
header, whatever else the Cookie header holds. A malformed pair before the session cookie used to make
the middleware's own parser give up (so it saw no session) while authentication still found the cookie:
a cross-site ``text/plain`` POST restored an old document version and a DELETE went through."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.support import ApiClient, LiveApp

# What a page on another site (or a sloppy cookie on a sibling domain) can put before our cookies.
PREFIXES = ["", "[x=1; ", 'a="b; ', "x y=1; ", "=; ", "a=b;; "]


def _cookie_header(client: ApiClient, prefix: str) -> str:
    return (f"{prefix}agentloft_session={client.cookies['agentloft_session']}; "
            f"agentloft_csrf={client.cookies['agentloft_csrf']}")


def _send(app: LiveApp, method: str, url: str, cookie: str, token: str | None, **kw: Any) -> httpx.Response:
    """A request with exactly this Cookie header (no cookie jar) and, when given, this CSRF header."""
    headers = {"Cookie": cookie, **kw.pop("headers", {})}
    if token is not None:
        headers["X-CSRF-Token"] = token
    with httpx.Client(base_url=app.url, timeout=30) as raw:
        return raw.request(method, url, headers=headers, **kw)


def _refused(response: httpx.Response) -> None:
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == "csrf_failed"


def _check_method(
    app: LiveApp,
    method: str,
    url: str,
    cookie: str,
    token: str,
    unchanged: Callable[[], bool],
    **kw: Any,
) -> httpx.Response:
    """Without the header and with a wrong one: 403 and nothing changed. With the right one: it runs (so
    the same Cookie header does authenticate; the refusals were not mere sign-in failures)."""
    _refused(_send(app, method, url, cookie, None, **kw))
    _refused(_send(app, method, url, cookie, "forged", **kw))
    _refused(_send(app, method, url, cookie, "", **kw))
    assert unchanged(), f"{method} {url} changed something without a CSRF token"
    done = _send(app, method, url, cookie, token, **kw)
    assert done.status_code in (200, 201, 204), f"{method} {url}: {done.status_code} {done.text}"
    return done


@pytest.mark.parametrize("prefix", PREFIXES, ids=repr)
def test_every_unsafe_method_needs_the_token(
    app: LiveApp, admin: ApiClient, user: ApiClient, prefix: str
) -> None:
    doc = user.ok("POST", "/api/agent-documents", json={"title": "Plan", "content": "first"})
    user.ok("PUT", f"/api/agent-documents/{doc['id']}", json={"content": "second"})
    url = f"/api/agent-documents/{doc['id']}"

    def content() -> str:
        return str(user.ok("GET", url)["content"])

    cookie, token = _cookie_header(user, prefix), user.cookies["agentloft_csrf"]

    # POST: the attack from the report, a form-like text/plain body restoring an old version.
    _check_method(app, "POST", f"{url}/versions/1/restore", cookie, token,
                  lambda: content() == "second",
                  content=b"x", headers={"Content-Type": "text/plain"})
    assert content() == "first"
    # POST with JSON: a new document.
    before = user.ok("GET", "/api/agent-documents")["total"]
    _check_method(app, "POST", "/api/agent-documents", cookie, token,
                  lambda: user.ok("GET", "/api/agent-documents")["total"] == before,
                  json={"title": "Injected", "content": "x"})
    # PUT
    _check_method(app, "PUT", url, cookie, token, lambda: content() == "first", json={"content": "third"})
    assert content() == "third"
    # DELETE
    _check_method(app, "DELETE", url, cookie, token, lambda: user.get(url).status_code == 200)
    assert user.get(url).status_code == 404

    # PATCH, as an admin: promoting an account.
    def alice_role() -> str:
        users = admin.ok("GET", "/api/admin/users")["items"]
        return str(next(u["role"] for u in users if u["username"] == "alice"))

    alice_id = user.ok("GET", "/api/auth/me")["id"]
    _check_method(app, "PATCH", f"/api/admin/users/{alice_id}", _cookie_header(admin, prefix),
                  admin.cookies["agentloft_csrf"], lambda: alice_role() == "user", json={"role": "admin"})
    assert alice_role() == "admin"


def test_session_cookie_in_a_second_cookie_header_needs_the_token(app: LiveApp, user: ApiClient) -> None:
    """Two Cookie headers (HTTP/1.1 clients may send them): whichever one carries the session, the
    middleware sees what authentication sees."""
    before = user.ok("GET", "/api/agent-documents")["total"]
    headers = [("Cookie", f"agentloft_session={user.cookies['agentloft_session']}"),
               ("Cookie", "theme=dark")]
    with httpx.Client(base_url=app.url, timeout=30) as raw:
        r = raw.post("/api/agent-documents", headers=headers, json={"title": "Injected", "content": "x"})
    _refused(r)
    assert user.ok("GET", "/api/agent-documents")["total"] == before


def test_unknown_unsafe_method_with_session_cookie_is_refused(app: LiveApp, user: ApiClient) -> None:
    """Anything but GET, HEAD, OPTIONS and TRACE counts as a write."""
    r = _send(app, "PROPFIND", "/api/agent-documents", _cookie_header(user, ""), None)
    _refused(r)


def test_safe_methods_and_bearer_writes_need_no_token(app: LiveApp, user: ApiClient) -> None:
    cookie = _cookie_header(user, "[x=1; ")
    assert _send(app, "GET", "/api/auth/me", cookie, None).json()["username"] == "alice"
    bearer = user.ok("POST", "/api/auth/tokens", json={"name": "cli"})["token"]
    with httpx.Client(base_url=app.url, timeout=30) as raw:
        r = raw.post("/api/agent-documents", json={"title": "By token", "content": "x"},
                     headers={"Authorization": f"Bearer {bearer}", "Cookie": cookie})
    assert r.status_code == 201, r.text
