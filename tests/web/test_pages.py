"""Pages over plain HTTP: who is redirected where, the error page, language choice, static files."""

from __future__ import annotations

import re
from pathlib import Path

import agentloft.web
from tests.fakes.openai_server import FakeModel, text
from tests.support import ApiClient, LiveApp

PAGES = ["/chat", "/approvals", "/tokens",
         "/admin/users", "/admin/models", "/admin/agents", "/admin/settings", "/admin/agent-tools",
         "/admin/audit",
         "/admin/mcp-servers"]
ADMIN_PAGES = [p for p in PAGES if p.startswith("/admin")]


def test_strangers_are_sent_to_login_with_next(anon: ApiClient) -> None:
    for path in PAGES:
        r = anon.get(path, follow_redirects=False)
        assert r.status_code == 303, path
        assert r.headers["location"] == "/login?next=" + path.replace("/", "%2F")
    assert anon.get("/", follow_redirects=False).headers["location"] == "/login"


def test_signed_in_home_goes_to_chat_and_login_page_goes_on(admin: ApiClient) -> None:
    assert admin.get("/", follow_redirects=False).headers["location"] == "/chat"
    r = admin.get("/login?next=/admin/models", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/admin/models"


def test_login_never_follows_an_offsite_next(anon: ApiClient, admin: ApiClient) -> None:
    page = anon.get("/login?next=//evil.example/x").text
    assert 'data-next="/"' in page
    assert admin.get("/login?next=https://evil.example", follow_redirects=False).headers["location"] == "/"


def test_login_never_follows_a_next_that_a_browser_reads_as_offsite(anon: ApiClient) -> None:
    """Browsers drop tabs and newlines from a URL before parsing it: ``/<tab>/evil.example`` is
    ``//evil.example``, another site. Such a ``next`` must not reach the sign-in form or a redirect."""
    for raw in ["/%09/evil.example/x", "/%0a/evil.example/x", "/%0d/evil.example/x", "/%0D%0A/evil.example",
                "/%00/evil.example", "/%7f/evil.example"]:
        page = anon.get(f"/login?next={raw}").text
        assert 'data-next="/"' in page, raw
        r = anon.get(f"/lang/en?next={raw}", follow_redirects=False)
        assert r.headers["location"] == "/", raw


def test_admin_sees_every_page_with_admin_nav(admin: ApiClient, model_id: int) -> None:
    for path in PAGES:
        r = admin.get(path)
        assert r.status_code == 200, path
        assert 'href="/admin/agents"' in r.text and 'href="/agent-documents"' in r.text
        assert 'href="/tokens"' in r.text and 'id="sign-out"' in r.text


def test_non_admin_gets_a_403_page_without_admin_nav(user: ApiClient) -> None:
    for path in ADMIN_PAGES:
        r = user.get(path)
        assert r.status_code == 403, path
        assert r.headers["content-type"].startswith("text/html")
        assert 'data-code="admin_required"' in r.text and "Only administrators may do this." in r.text
        assert ">admin_required<" not in r.text  # a person reads words, not the code
    page = user.get("/chat").text
    assert 'href="/admin/agents"' not in page and 'href="/agent-documents"' in page


def test_signup_page_hints_first_account_then_says_closed(app: LiveApp, anon: ApiClient) -> None:
    page = anon.get("/signup").text
    assert 'data-testid="first-account-hint"' in page and 'id="signup-form"' in page
    anon.ok("POST", "/api/auth/signup", json={"username": "root", "password": "password123"})
    with app.client() as other:
        page = other.get("/signup").text
        assert 'data-testid="signup-closed"' in page and 'id="signup-form"' not in page
        assert 'href="/signup"' not in other.get("/login").text  # sign-in offers no sign-up that is closed
        anon.ok("PUT", "/api/admin/settings", json={"signupOpen": True})
        assert 'data-testid="signup-offer"' in other.get("/login").text


def test_language_from_accept_language_and_cookie(app: LiveApp) -> None:
    with app.client(headers={"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.8"}) as c:
        page = c.get("/login").text
        assert '<html lang="zh-CN">' in page and "登录" in page
        r = c.get("/lang/en?next=/login", follow_redirects=False)
        assert r.status_code == 303 and r.headers["location"] == "/login"
        assert "agentloft_lang=en" in r.headers["set-cookie"]
        page = c.get("/login").text
        assert '<html lang="en">' in page and "Sign in" in page
    with app.client(headers={"Accept-Language": "fr-FR, en;q=0.5"}) as c:
        assert '<html lang="en">' in c.get("/login").text
    with app.client() as c:
        assert c.get("/lang/xx").status_code == 404


def test_strings_for_scripts_are_embedded_safely(anon: ApiClient) -> None:
    page = anon.get("/login").text
    blob = re.search(r'<script type="application/json" id="i18n-strings">(.*?)</script>', page, re.S)
    assert blob and '"login.title": "Sign in"' in blob.group(1)


def test_static_files_are_served(anon: ApiClient) -> None:
    for path in ("/static/css/app.css", "/static/js/api.js", "/static/js/pages/admin-models.js"):
        r = anon.get(path)
        assert r.status_code == 200, path
    assert "javascript" in anon.get("/static/js/api.js").headers["content-type"]


def test_pages_stay_out_of_openapi(anon: ApiClient) -> None:
    paths = anon.get("/openapi.json").json()["paths"]
    assert "/api/render/markdown" in paths
    assert "/login" not in paths and "/admin/models" not in paths


def test_chat_session_page_is_for_its_owner_only(
    admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})
    fake_model.push(text("hi"))
    r = user.post("/api/agents/helper/chat", json={"message": "hello"})
    assert r.status_code == 200
    session_id = r.headers["x-session-id"]
    page = user.get(f"/chat/{session_id}")
    assert page.status_code == 200 and f'data-session-id="{session_id}"' in page.text
    other = admin.get(f"/chat/{session_id}")
    assert other.status_code == 404 and "session_not_found" in other.text


def test_chat_page_lists_enabled_agents_and_the_plain_model(
    admin: ApiClient, user: ApiClient, model_id: int
) -> None:
    admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})
    admin.ok("POST", "/api/admin/agents", json={"slug": "hidden", "name": "Hidden", "enabled": False})
    page = user.get("/chat").text
    assert '<option value="helper" selected' in page and 'value="hidden"' not in page
    assert '<option value="" selected' in user.get("/chat?agent=").text
    assert '<option value="helper" selected' in user.get("/chat?agent=helper").text


def test_chat_page_opens_on_the_default_for_an_agent_the_reader_cannot_use(
    admin: ApiClient, user: ApiClient, model_id: int
) -> None:
    """An address naming an agent that is disabled, limited to a group the reader is not in, or unknown
    opens the default agent, and the page does not take up the name (the address, which the language links
    keep, is the reader's own): the same whether such an agent exists or not."""
    admin.ok("POST", "/api/admin/agents", json={"slug": "helper", "name": "Helper"})
    admin.ok("POST", "/api/admin/agents", json={"slug": "switched-off", "name": "Off", "enabled": False})
    team = admin.ok("POST", "/api/admin/groups", json={"name": "team"})["id"]
    admin.ok("POST", "/api/admin/agents", json={"slug": "team-only", "name": "Team", "groupIds": [team]})
    for slug in ("switched-off", "team-only", "no-such-agent"):
        page = user.get(f"/chat?agent={slug}").text
        assert '<option value="helper" selected' in page and 'data-selected="helper"' in page, slug


def test_no_form_can_put_what_was_typed_in_the_address() -> None:
    """Pages send their forms from scripts; a form submitted before its script runs (Enter in a password
    field on a slow network) is sent by the browser, which without a method puts every field, passwords
    and API keys too, in the URL. Each form names its method: post, dialog, or get for a search."""
    templates = Path(agentloft.web.__file__).parent / "templates"
    unsafe = []
    for path in templates.rglob("*.html"):
        for tag in re.findall(r"<form\b[^>]*>", path.read_text()):
            method = re.search(r'\bmethod="(post|dialog|get)"', tag)
            if not method or (method.group(1) == "get" and 'role="search"' not in tag):
                unsafe.append((path.name, tag))
    assert not unsafe, unsafe


def test_head_answers_like_get_without_a_body(anon: ApiClient, user: ApiClient) -> None:
    """Uptime checks and link checkers ask with HEAD (``curl -I``): pages and the health check answer as
    GET would, without the body, instead of 405."""
    for client, path, status in [(anon, "/", 303), (anon, "/login", 200), (anon, "/chat", 303),
                                 (user, "/chat", 200), (user, "/admin/users", 403), (anon, "/api/health", 200)]:
        r = client.head(path, follow_redirects=False)
        assert r.status_code == status, (path, r.status_code)
        assert r.content == b"", path
        get = client.get(path, follow_redirects=False)
        assert r.headers.get("content-type") == get.headers.get("content-type"), path


def test_a_page_address_with_a_bad_query_gets_the_error_page(user: ApiClient) -> None:
    """A mistyped or stale link (``?page=-1``) to a page shows the error page, like every other refusal a
    page makes, not the API's JSON."""
    for path in ("/agent-documents?page=-1", "/agent-documents?page=abc", "/agent-documents?type=bogus"):
        r = user.get(path)
        assert r.status_code == 422, path
        assert r.headers["content-type"].startswith("text/html"), path
        assert "validation_error" in r.text, path
    assert user.get("/api/agent-documents?page=-1").headers["content-type"] == "application/json"
