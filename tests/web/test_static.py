"""Static files under versioned URLs with long-lived cache headers, and compression of pages and static
files but never of the API's streams (issue 14 point 9), over HTTP."""

from __future__ import annotations

import re
from typing import Any

from tests.chat.helpers import make_agent
from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp

GZIP = {"Accept-Encoding": "gzip"}


def test_pages_link_versioned_static_files_kept_for_a_year(admin: ApiClient, model_id: int) -> None:
    page = admin.get("/chat").text
    urls = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    assert urls and all(re.match(r"^/static/v-[0-9a-f]{12}/", u) for u in urls), urls
    assert any(u.endswith("/js/chat/extensions/a2a-panel.js") for u in urls)  # extensions too
    assert any(u.endswith("/favicon.svg") for u in urls)
    current = admin.get(urls[0])
    assert current.status_code == 200 and current.headers["cache-control"] == "public, max-age=31536000, immutable"
    plain = admin.get("/static/css/app.css")
    assert plain.status_code == 200 and plain.headers["cache-control"] == "no-cache" and plain.headers["etag"]
    assert admin.get("/static/css/app.css", headers={"If-None-Match": plain.headers["etag"]}).status_code == 304
    older = admin.get("/static/v-000000000000/css/app.css")  # a page from before a release
    assert older.status_code == 200 and older.headers["cache-control"] == "no-cache"
    assert admin.get("/static/v-000000000000/../../app.py").status_code == 404
    icon = admin.get("/favicon.ico", follow_redirects=False)
    assert icon.status_code == 301 and re.match(r"^/static/v-[0-9a-f]{12}/favicon.svg$", icon.headers["location"])
    assert admin.get(icon.headers["location"]).headers["content-type"].startswith("image/svg+xml")


def test_pages_and_static_files_are_compressed_the_api_is_not(admin: ApiClient, model_id: int) -> None:
    for path in ("/chat", "/static/css/app.css", "/static/js/chat/message.js", "/agent-documents"):
        r = admin.get(path, headers=GZIP)
        assert r.headers.get("content-encoding") == "gzip", path
        assert "accept-encoding" in r.headers.get("vary", "").lower()
    r = admin.get("/api/agent-sessions", headers=GZIP)
    assert "content-encoding" not in r.headers


def test_sse_streams_are_neither_compressed_nor_buffered(
    app: LiveApp, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    make_agent(admin, "helper", modelId=model_id)
    fake_model.push(Step(text=" ".join(f"w{i}" for i in range(30)), delay=0.2))
    with admin.stream("POST", "/api/agents/helper/chat", json={"message": "go"}, headers=GZIP) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        assert "content-encoding" not in resp.headers
        sid = resp.headers["x-session-id"]
        seen: list[Any] = []
        for line in resp.iter_lines():
            if '"text-delta"' in line:
                seen.append(line)
                break
        # The first words arrived while the model is still writing: nothing held the stream back.
        assert seen and app.sql("SELECT status FROM agent_sessions WHERE id = ?", (sid,)) == [("running",)]
        admin.ok("POST", f"/api/agent-sessions/{sid}/stop")
