"""Every response tells the browser what it may do: no framing (a framed chat page turns a decoy click into
"Approve"), no type sniffing, only the server's own scripts, and no images from elsewhere unless the admin
allows them (an image address in a reply is a way out for what the agent read)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from tests.support import ApiClient, LiveApp, start_app


def _policy(response_headers: Mapping[str, str]) -> dict[str, str]:
    header = response_headers["content-security-policy"]
    return {d.split(" ", 1)[0]: d.split(" ", 1)[1] for d in (p.strip() for p in header.split(";")) if " " in d}


def test_pages_api_and_static_files_forbid_framing_sniffing_and_foreign_scripts(admin: ApiClient) -> None:
    for path in ("/chat", "/login", "/api/agent-sessions", "/static/css/app.css", "/no-such-page"):
        r = admin.get(path, headers={"Accept": "text/html"})
        assert r.headers["x-frame-options"] == "DENY", path
        assert r.headers["x-content-type-options"] == "nosniff", path
        assert r.headers["referrer-policy"] == "same-origin", path
        policy = _policy(r.headers)
        assert policy["frame-ancestors"] == "'none'", path
        assert policy["script-src"] == "'self'", path
        assert policy["object-src"] == "'none'" and policy["base-uri"] == "'none'", path
        assert policy["img-src"] == "'self' data: blob:", path
        assert policy["connect-src"] == "'self'", path


def test_the_api_documentation_keeps_its_viewer(admin: ApiClient) -> None:
    r = admin.get("/docs")
    assert r.status_code == 200
    assert "content-security-policy" not in r.headers  # its viewer comes from a CDN
    assert r.headers["x-frame-options"] == "DENY"


def test_an_admin_can_allow_images_from_other_sites(tmp_path: Path, template_db: Path) -> None:
    live: LiveApp = start_app(tmp_path / "data", template_db, allow_remote_images=True)
    try:
        r = live.client().get("/login")
        assert _policy(r.headers)["img-src"] == "'self' data: blob: https: http:"
        assert _policy(r.headers)["script-src"] == "'self'"  # nothing else loosens
    finally:
        live.stop()
