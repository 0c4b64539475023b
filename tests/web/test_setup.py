"""First run over plain HTTP: admins without a model are sent to /setup, users read a notice instead of a
broken chat, the chat opens on the Assistant, and the bootstrap model from the environment serves it."""

from __future__ import annotations

from pathlib import Path

from agentloft.core.settings import Settings
from agentloft.llm.presets import SETUP_PRESETS
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, FakeModelServer, text
from tests.support import ApiClient, signup, start_app

NOTICE_EN = "An administrator has not set up a model yet"
NOTICE_ZH = "管理员还没有配置模型"


def location(client: ApiClient, path: str) -> str:
    r = client.get(path, follow_redirects=False)
    assert r.status_code == 303, (path, r.status_code)
    return r.headers["location"]


def test_admin_without_a_model_is_sent_to_setup(admin: ApiClient) -> None:
    assert location(admin, "/") == "/chat"
    assert location(admin, "/chat") == "/setup"
    page = admin.get("/setup")
    assert page.status_code == 200 and 'id="setup-form"' in page.text
    for preset in SETUP_PRESETS:  # every preset is offered with what it fills in and whether it needs a key
        assert f'value="{preset.id}"' in page.text, preset.id
    assert 'data-base-url="http://127.0.0.1:11434/v1"' in page.text and 'data-needs-key="false"' in page.text
    # any other OpenAI-compatible server, with a key field of its own (shown, not required)
    assert 'value="custom"' in page.text and 'data-offers-key="true"' in page.text
    own_port = f":{Settings.model_fields['port'].default}/"
    assert not [p.id for p in SETUP_PRESETS if p.base_url and own_port in p.base_url]  # never agentloft itself
    assert 'data-testid="setup-has-model"' not in page.text


def test_admin_with_a_model_goes_straight_to_the_chat(admin: ApiClient, model_id: int) -> None:
    assert location(admin, "/") == "/chat"
    page = admin.get("/chat", follow_redirects=False)
    assert page.status_code == 200 and 'id="composer"' in page.text
    assert 'data-testid="setup-has-model"' in admin.get("/setup").text  # still reachable, says so


def test_a_disabled_model_does_not_count(admin: ApiClient, model_id: int) -> None:
    admin.ok("PUT", f"/api/admin/models/{model_id}", json={"enabled": False})
    assert location(admin, "/chat") == "/setup"


def test_user_sees_a_notice_until_a_model_exists(
    admin: ApiClient, user: ApiClient, fake_model_server: FakeModelServer
) -> None:
    page = user.get("/chat", follow_redirects=False)
    assert page.status_code == 200
    assert 'data-testid="no-model-notice"' in page.text and NOTICE_EN in page.text
    assert 'id="composer"' not in page.text and "chat/chat.js" not in page.text
    zh = user.get("/chat", headers={"Accept-Language": "zh-CN"}).text
    assert NOTICE_ZH in zh and NOTICE_EN not in zh
    assert user.get("/setup").status_code == 403  # the setup page is for admins only

    admin.ok("POST", "/api/admin/models", json={
        "name": "Fake", "provider": "openai", "baseUrl": fake_model_server.base_url, "model": "fake-model"})
    page = user.get("/chat").text
    assert 'id="composer"' in page and 'data-testid="no-model-notice"' not in page


def test_chat_opens_on_the_assistant(tmp_path: Path, template_db: Path, fake_model_server: FakeModelServer) -> None:
    live = start_app(tmp_path / "data", template_db, create_defaults=True)
    try:
        with live.client() as admin:
            signup(admin, "root")
            admin.ok("POST", "/api/admin/models", json={
                "name": "Fake", "provider": "openai", "baseUrl": fake_model_server.base_url, "model": "fake-model"})
            other = admin.ok("POST", "/api/admin/agents", json={"slug": "aardvark", "name": "Aardvark"})
            # The default Assistant's description is read in the reader's language; an admin's own text
            # as it is; tool cards learn the names of the tools this user may call.
            zh = admin.get("/chat", headers={"Accept-Language": "zh-CN"}).text
            assert "通用助手" in zh and "A helpful general assistant" not in zh
            assert '"calculator":"计算器"' in zh.replace(" ", "")
            page = admin.get("/chat").text  # "Aardvark" sorts first, yet the chat opens on the Assistant
            assert "A helpful general assistant with a calculator" in page
            assert '<option value="assistant" selected' in page and '<option value="aardvark" selected' not in page
            assistant = next(a for a in admin.ok("GET", "/api/admin/agents")["items"] if a["slug"] == "assistant")
            admin.ok("PUT", f"/api/admin/agents/{assistant['id']}", json={"enabled": False})
            assert f'<option value="{other["slug"]}" selected' in admin.get("/chat").text
    finally:
        live.stop()


def test_bootstrap_model_is_the_default_and_serves_the_assistant(
    tmp_path: Path, template_db: Path, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    live = start_app(tmp_path / "data", template_db, create_defaults=True,
                     openai_base_url=fake_model_server.base_url, default_model="fake-model")
    try:
        with live.client() as admin:
            signup(admin, "root")
            assert location(admin, "/") == "/chat"
            assert admin.get("/chat", follow_redirects=False).status_code == 200  # no setup needed
            models = admin.ok("GET", "/api/admin/models")["items"]
            assert len(models) == 1 and models[0]["isDefault"] and models[0]["model"] == "fake-model"
            assert models[0]["baseUrl"] == fake_model_server.base_url.rstrip("/")
            assistant = next(a for a in admin.ok("GET", "/api/admin/agents")["items"] if a["slug"] == "assistant")
            assert assistant["modelId"] is None  # follows whatever the default model is

            fake_model.push(text("Hello from the bootstrap model."))
            reply = chat(admin, "assistant", "hi")
            assert reply.status == 200 and reply.text == "Hello from the bootstrap model."
            assert len(fake_model.requests) == 1 and fake_model.requests[0]["model"] == "fake-model"
    finally:
        live.stop()


def test_bootstrap_model_takes_over_as_default_on_restart(
    tmp_path: Path, template_db: Path, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    live = start_app(tmp_path / "data", template_db, create_defaults=True)
    try:
        with live.client() as admin:
            signup(admin, "root")
            admin.ok("POST", "/api/admin/models", json={"name": "Earlier", "provider": "openai", "isDefault": True,
                                                        "baseUrl": fake_model_server.base_url, "model": "earlier"})
    finally:
        live.stop()
    live = start_app(tmp_path / "data", None, create_defaults=True,
                     openai_base_url=fake_model_server.base_url, default_model="fake-model")
    try:
        with live.client() as admin:
            admin.ok("POST", "/api/auth/login", json={"username": "root", "password": "password123"})
            defaults = [m["model"] for m in admin.ok("GET", "/api/admin/models")["items"] if m["isDefault"]]
            assert defaults == ["fake-model"]
            fake_model.push(text("From the environment's model."))
            assert chat(admin, "assistant", "hi").text == "From the environment's model."
            assert fake_model.requests[-1]["model"] == "fake-model"
    finally:
        live.stop()
