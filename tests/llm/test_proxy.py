"""Model traffic honours the proxy settings users make in the environment (``HTTP_PROXY``, ``HTTPS_PROXY``,
``NO_PROXY``), for plain-http and https endpoints alike, through the chat endpoint.

The app is started after the variables are set (the model client reads them when it is built); the
test's own client to the app ignores them (``trust_env=False``), so only model traffic is at stake.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.chat.helpers import chat, make_agent
from tests.fakes.openai_server import FakeModel, FakeModelServer, text
from tests.fakes.proxy import ForwardProxy
from tests.support import ApiClient, LiveApp, start_app

PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY",
              "http_proxy", "https_proxy", "all_proxy", "no_proxy")


@pytest.fixture
def proxy() -> Iterator[ForwardProxy]:
    server = ForwardProxy().start()
    yield server
    server.stop()


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARS:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def _app_with_model(tmp_path: Path, template_db: Path, base_url: str) -> tuple[LiveApp, ApiClient]:
    live = start_app(tmp_path / "data", template_db)
    admin = live.client(trust_env=False)
    admin.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
    model = admin.ok("POST", "/api/admin/models", json={"name": "M", "provider": "openai", "baseUrl": base_url,
                                                        "model": "m"})
    make_agent(admin, "helper", modelId=model["id"])
    return live, admin


def test_plain_http_model_calls_go_through_http_proxy(
    tmp_path: Path, template_db: Path, clean_env: pytest.MonkeyPatch, proxy: ForwardProxy,
    fake_model_server: FakeModelServer, fake_model: FakeModel,
) -> None:
    clean_env.setenv("HTTP_PROXY", proxy.url)
    live, admin = _app_with_model(tmp_path, template_db, fake_model_server.base_url)
    try:
        fake_model.push(text("through the proxy"))
        assert chat(admin, "helper", "hello").text == "through the proxy"
        assert proxy.requests == [f"POST {fake_model_server.base_url}/chat/completions HTTP/1.1"]
    finally:
        admin.close()
        live.stop()


def test_no_proxy_hosts_are_reached_directly(
    tmp_path: Path, template_db: Path, clean_env: pytest.MonkeyPatch, proxy: ForwardProxy,
    fake_model_server: FakeModelServer, fake_model: FakeModel,
) -> None:
    clean_env.setenv("HTTP_PROXY", proxy.url)
    clean_env.setenv("NO_PROXY", "example.org,127.0.0.1")
    live, admin = _app_with_model(tmp_path, template_db, fake_model_server.base_url)
    try:
        fake_model.push(text("directly"))
        assert chat(admin, "helper", "hello").text == "directly"
        assert proxy.requests == []
    finally:
        admin.close()
        live.stop()


def test_https_model_calls_tunnel_through_https_proxy(
    tmp_path: Path, template_db: Path, clean_env: pytest.MonkeyPatch, proxy: ForwardProxy,
) -> None:
    """The proxy refuses the tunnel: the chat fails cleanly, and the proxy saw the model's host asked for."""
    clean_env.setenv("HTTPS_PROXY", proxy.url)
    live, admin = _app_with_model(tmp_path, template_db, "https://models.example.test/v1")
    try:
        res = chat(admin, "helper", "hello")
        assert res.of("error")[0]["errorText"] == "The model could not be reached (connection failed)."
        assert proxy.requests and all(r == "CONNECT models.example.test:443 HTTP/1.1" for r in proxy.requests)
    finally:
        admin.close()
        live.stop()
