"""``AGENTLOFT_MODEL_TIMEOUT_SECONDS`` is the longest a chat waits for a model that says nothing: until the
first words of a step (connecting, the headers, the first chunk and every retry of the provider's SDK
together) and between two chunks. A silent model gets one attempt, which uses the whole budget: no retry
stacks on it. A model that fails fast is still retried within the budget. Both providers, over HTTP, on
the fake servers' silent (``hang``) and stalling (``stall_after``) modes.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloft.llm import service as llm_service
from agentloft.web.i18n import catalog
from tests.chat.helpers import chat, make_agent
from tests.fakes.anthropic_server import FakeAnthropic, FakeAnthropicServer, Reply, Text
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, text
from tests.support import ApiClient, LiveApp, start_app

TIMEOUT_S = 2.0
TIMED_OUT = "The model did not answer in time."


@pytest.fixture
def quick(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    """An app whose models may keep quiet for ``TIMEOUT_S``."""
    live = start_app(tmp_path / "quick", template_db, model_timeout_seconds=TIMEOUT_S)
    yield live
    live.stop()


@pytest.fixture
def boss(quick: LiveApp) -> Iterator[ApiClient]:
    with quick.client() as client:
        client.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
        yield client


def _openai_agent(admin: ApiClient, server: FakeModelServer, slug: str = "quiet") -> dict[str, Any]:
    """An agent ``slug`` on a model of the fake OpenAI-compatible server; returns the model."""
    model = admin.ok("POST", "/api/admin/models", json={
        "name": "Fake", "provider": "openai", "baseUrl": server.base_url, "model": "fake"})
    make_agent(admin, slug, modelId=model["id"])
    return model


def _anthropic_agent(admin: ApiClient, server: FakeAnthropicServer, slug: str = "quiet") -> dict[str, Any]:
    """An agent ``slug`` on a model of the fake Anthropic server; returns the model."""
    model = admin.ok("POST", "/api/admin/models", json={
        "name": "Claude", "provider": "anthropic", "baseUrl": server.base_url, "model": "claude-fake",
        "apiKey": "sk-ant-test"})
    make_agent(admin, slug, modelId=model["id"])
    return model


def _reply(app: LiveApp, session_id: str | None) -> tuple[str, str, str]:
    return app.sql("SELECT status, content, error FROM agent_messages WHERE session_id = ? AND role = 'assistant' "
                   "ORDER BY sort_order DESC LIMIT 1", (session_id,))[0]


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_silent_model_gets_one_attempt_within_the_timeout(
    provider: str, quick: LiveApp, boss: ApiClient, request: pytest.FixtureRequest
) -> None:
    if provider == "openai":
        openai: FakeModel = request.getfixturevalue("fake_model")
        _openai_agent(boss, request.getfixturevalue("fake_model_server"))
        openai.default, requests = (lambda body: Step(hang=True)), openai.requests
    else:
        anthropic: FakeAnthropic = request.getfixturevalue("fake_anthropic")
        _anthropic_agent(boss, request.getfixturevalue("anthropic_server"))
        anthropic.default, requests = (lambda body: Reply(hang=True)), anthropic.requests
    res = chat(boss, "quiet", "anyone there?")
    assert res.of("error")[0]["errorText"] == TIMED_OUT
    assert res.of("data-error")[0]["data"] == {"code": "model_timeout", "requestId": res.headers["x-request-id"]}
    assert len(requests) == 1, "no retry was stacked on the timeout"
    assert _reply(quick, res.session_id)[:2] == ("failed", "")


def test_a_silent_model_holds_a_title_no_longer_than_the_timeout(
    quick: LiveApp, boss: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    # The title call is bounded in all (every SDK retry with it) by the model's timeout, as a reply is:
    # a per-attempt timeout let a silent model keep it ~60 s. The first words stay the title.
    boss.ok("PUT", "/api/admin/settings", json={"generateTitles": True})
    _openai_agent(boss, fake_model_server)
    fake_model.push(text("hello"), Step(hang=True))
    sid = chat(boss, "quiet", "What is the weather like?").session_id
    started = time.monotonic()
    named = boss.ok("POST", f"/api/agent-sessions/{sid}/title")
    assert time.monotonic() - started < TIMEOUT_S + 1.5
    assert named["title"] == "What is the weather like?"
    assert len(fake_model.requests) == 2, "one chat request, one title attempt: no retry after the timeout"


def test_a_model_that_stalls_between_chunks_keeps_the_text_so_far(
    quick: LiveApp, boss: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel,
    anthropic_server: FakeAnthropicServer, fake_anthropic: FakeAnthropic,
) -> None:
    _openai_agent(boss, fake_model_server)
    fake_model.push(Step(text="one two three four", stall_after=2))
    res = chat(boss, "quiet", "count")
    assert res.text == "one two " and res.of("error")[0]["errorText"] == TIMED_OUT
    assert _reply(quick, res.session_id)[:2] == ("failed", "one two ")

    _anthropic_agent(boss, anthropic_server, "claude")
    fake_anthropic.push(Reply(blocks=[Text("one two three four")], stall_after=2))
    res = chat(boss, "claude", "count")
    assert res.text == "one two " and res.of("error")[0]["errorText"] == TIMED_OUT


def test_a_model_that_fails_fast_is_retried_within_the_budget(
    quick: LiveApp, boss: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    _openai_agent(boss, fake_model_server)
    fake_model.push(Step(error_status=503, error_message="warming up"), text("ready now"))
    res = chat(boss, "quiet", "hello")
    assert res.text == "ready now" and not res.of("error")
    assert len(fake_model.requests) == 2


def test_the_model_test_gives_a_silent_model_its_own_short_limit(
    quick: LiveApp, boss: ApiClient, fake_model_server: FakeModelServer, fake_model: FakeModel,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The admin pages' Test waits ``TEST_LIMIT_S`` in all (shortened here; the app runs in this process),
    retries included, and says so."""
    monkeypatch.setattr(llm_service, "TEST_LIMIT_S", 1.5)
    model = _openai_agent(boss, fake_model_server)
    fake_model.default = lambda body: Step(hang=True)
    res = boss.ok("POST", f"/api/admin/models/{model['id']}/test")
    assert res["ok"] is False
    assert res["error"].startswith("The model did not answer within 1.5 s, the longest the test waits (a chat "
                                    "waits up to 2 s")
    assert len(fake_model.requests) == 1


def test_the_pages_say_how_long_the_model_test_waits() -> None:
    limit = f"{llm_service.TEST_LIMIT_S:g}"
    for key in ("admin.models.testing", "setup.testing"):
        assert f"at most {limit} s" in catalog("en")[key]
        assert f"最多 {limit} 秒" in catalog("zh-CN")[key]
