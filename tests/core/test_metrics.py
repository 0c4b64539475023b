"""``/metrics``: off by default; each family appears and moves after real turns against the fake model;
no label value holds a user id, a session id or a user's words; the loopback / token rule; the turn's
log line."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy import text as sql

from agentloft.core import metrics as prometheus
from agentloft.core.db import Database
from agentloft.core.errors import Forbidden, Unauthorized
from agentloft.core.logs import RequestIdFilter
from tests.chat.helpers import attach, chat, make_agent, make_tool, register_test_tools, wait_for
from tests.fakes.openai_server import FakeModel, Step, ToolCall, call, text
from tests.support import ApiClient, LiveApp, running_app, start_app

SECRET_WORDS = "zebra-quartz-lantern"
TOKEN = "scrape-token-1"
Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    # forwarded headers believed from loopback, so a test can speak as a client on another machine
    yield from running_app(tmp_path, template_db, metrics=True, metrics_token=TOKEN,
                           forwarded_allow_ips=["127.0.0.1"])


def scrape(client: ApiClient, **headers: str) -> Samples:
    r = client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(r.text) for s in family.samples}


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sum of the samples named ``name`` whose labels include ``labels``."""
    return sum(v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls))


def _agent_with_tools(admin: ApiClient, model_id: int) -> dict[str, Any]:
    agent = make_agent(admin, "helper", modelId=model_id, maxSteps=5)
    echo = make_tool(admin, "echo", "test-echo")
    boom = make_tool(admin, "boom", "test-fail")
    guard = make_tool(admin, "guard", "test-guarded", needsApproval=True)
    attach(admin, agent["id"], *({"toolId": t["id"], "position": i} for i, t in enumerate((echo, boom, guard))))
    return agent


def test_metrics_are_not_found_while_off(tmp_path: Path, template_db: Path) -> None:
    live = next(running_app(tmp_path, template_db))
    try:
        with live.client() as c:
            r = c.get("/metrics")
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found"
    finally:
        live.stop()


def test_each_family_appears_and_moves_after_real_turns(
    app: LiveApp, admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    register_test_tools(app)
    _agent_with_tools(admin, model_id)
    before = scrape(user)
    fake_model.push(
        Step(text="Looking.", tool_calls=[ToolCall("echo", {"text": SECRET_WORDS}, id="c1"),
                                          ToolCall("boom", {"text": "x"}, id="c2")], input_tokens=5, output_tokens=3),
        text("Done.", input_tokens=11, output_tokens=4),
    )
    done = chat(user, "helper", f"tell me about {SECRET_WORDS}")
    assert done.text == "Looking.Done."
    fake_model.push(call("guard", {"action": "delete"}, id="g1", input_tokens=2, output_tokens=1))
    paused = chat(user, "helper", "delete it")
    assert paused.of("tool-approval-request")
    chat_route = {"method": "POST", "route": "/api/agents/{slug}/chat"}

    def settled() -> Samples | None:  # a request is counted once its response has ended
        s = scrape(user)
        finished = value(s, "agentloft_turns_finished_total") - value(before, "agentloft_turns_finished_total")
        answered = value(s, "agentloft_http_requests_total", **chat_route)
        return s if finished == 2 and answered - value(before, "agentloft_http_requests_total", **chat_route) == 2 \
            else None

    after = wait_for(settled)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("agentloft_turns_started_total", source="chat") == 2
    assert moved("agentloft_turns_finished_total", source="chat", outcome="complete") == 1
    assert moved("agentloft_turns_finished_total", source="chat", outcome="awaiting_approval") == 1
    assert moved("agentloft_turn_first_text_seconds_count") == 1  # the paused turn wrote no text
    assert moved("agentloft_turn_duration_seconds_count", outcome="complete") == 1
    assert moved("agentloft_turn_duration_seconds_sum") > 0
    assert moved("agentloft_model_calls_total", model="fake-model") == 3
    assert moved("agentloft_model_tokens_total", model="fake-model", kind="input") == 18
    assert moved("agentloft_model_tokens_total", model="fake-model", kind="output") == 8
    assert moved("agentloft_tool_calls_total", tool_type="test-echo", outcome="success") == 1
    assert moved("agentloft_tool_calls_total", tool_type="test-fail", outcome="tool_crashed") == 1
    assert value(after, "agentloft_approvals_pending") == 1
    assert moved("agentloft_http_requests_total", status="200", **chat_route) == 2
    assert moved("agentloft_http_request_duration_seconds_count", **chat_route) == 2
    assert ("agentloft_stream_followers", ()) in after and ("agentloft_db_connections_in_use", ()) in after
    assert ("agentloft_redis_errors_total", ()) in after  # no Redis here: present, and still 0
    _no_label_names_a_user_a_session_or_their_words(after, user, [done.session_id, paused.session_id])


def _no_label_names_a_user_a_session_or_their_words(samples: Samples, user: ApiClient,
                                                     session_ids: list[str | None]) -> None:
    user_id = str(user.ok("GET", "/api/auth/me")["id"])
    values = [v for (_, labels) in samples for k, v in labels if k not in ("le", "quantile")]
    assert values
    for label in values:
        assert label != user_id and SECRET_WORDS not in label and "delete it" not in label
        assert not any(sid and sid in label for sid in session_ids)


def test_a_follower_counts_while_its_stream_is_open(
    app: LiveApp, admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    make_agent(admin, "helper", modelId=model_id)
    fake_model.push(text("one two three", first_delay=30))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "hi"}) as resp:
        wait_for(lambda: value(scrape(admin), "agentloft_stream_followers") == 1)
        user.post(f"/api/agent-sessions/{resp.headers['x-session-id']}/stop")
        resp.read()
    wait_for(lambda: value(scrape(admin), "agentloft_stream_followers") == 0)


def test_a_scraper_elsewhere_needs_the_token(app: LiveApp, anon: ApiClient) -> None:
    away = {"X-Forwarded-For": "203.0.113.9"}
    missing = anon.get("/metrics", headers=away)
    assert missing.status_code == 401 and missing.json()["error"]["code"] == "metrics_token_required"
    assert missing.headers["www-authenticate"] == "Bearer"
    wrong = anon.get("/metrics", headers={**away, "Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    assert "agentloft_turns_started_total" in anon.get("/metrics", headers={
        **away, "Authorization": f"Bearer {TOKEN}"}).text
    assert "agentloft_http_requests_total" in anon.get("/metrics").text  # loopback: no token needed


def test_a_proxy_on_this_machine_does_not_make_its_clients_local(tmp_path: Path, template_db: Path) -> None:
    """No proxy named in AGENTLOFT_FORWARDED_ALLOW_IPS: the connection is from loopback, but the request
    carries a proxy's header, so it came from elsewhere and needs the token."""
    live = start_app(tmp_path / "data", template_db, metrics=True, metrics_token=TOKEN)
    try:
        anon = live.client()
        for header in ("X-Forwarded-For", "X-Real-IP", "Forwarded"):
            refused = anon.get("/metrics", headers={header: "203.0.113.9"})
            assert refused.status_code == 401, header
            assert refused.json()["error"]["code"] == "metrics_token_required"
        assert anon.get("/metrics", headers={"X-Forwarded-For": "203.0.113.9",
                                             "Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert anon.get("/metrics").status_code == 200
    finally:
        live.stop()


@pytest.mark.parametrize("host", ["127.0.0.1", "::1", "127.8.0.3"])
def test_loopback_clients_pass_without_a_token(host: str) -> None:
    prometheus.check_scraper(host, None, None, forwarded=False)


def test_without_a_token_only_loopback_is_answered() -> None:
    with pytest.raises(Forbidden) as refused:
        prometheus.check_scraper("10.0.0.5", f"Bearer {TOKEN}", None, forwarded=False)
    assert refused.value.code == "metrics_loopback_only"
    with pytest.raises(Forbidden):
        prometheus.check_scraper("127.0.0.1", None, None, forwarded=True)
    with pytest.raises(Unauthorized):
        prometheus.check_scraper(None, "Basic abc", TOKEN, forwarded=False)


def test_the_pool_gauge_follows_checked_out_connections(tmp_path: Path) -> None:
    async def main() -> list[float]:
        metrics = prometheus.PrometheusMetrics()
        db = Database(f"sqlite+aiosqlite:///{tmp_path / 'pool.db'}")
        metrics.watch_pool(db.engine)
        seen = []

        def in_use() -> float:
            assert metrics.registry is not None
            return metrics.registry.get_sample_value("agentloft_db_connections_in_use") or 0.0

        async with db.engine.connect() as first:
            await first.execute(sql("SELECT 1"))
            async with db.engine.connect() as second:
                await second.execute(sql("SELECT 1"))
                seen.append(in_use())
            seen.append(in_use())
        seen.append(in_use())
        await db.dispose()
        return seen

    assert asyncio.run(main()) == [2, 1, 0]


def test_one_log_line_per_turn_with_ids_and_no_words(
    app: LiveApp, admin: ApiClient, user: ApiClient, model_id: int, fake_model: FakeModel,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="agentloft.turns")
    caplog.handler.addFilter(RequestIdFilter())  # as ``agentloft serve``'s handler does, in the writing thread
    agent = make_agent(admin, "helper", modelId=model_id)
    fake_model.push(text(f"about {SECRET_WORDS}", input_tokens=6, output_tokens=2))
    res = chat(user, "helper", f"say {SECRET_WORDS}")
    line = wait_for(lambda: next((r for r in caplog.records if r.name == "agentloft.turns"), None))
    fields = line.__dict__
    assert fields["outcome"] == "complete" and fields["model"] == "fake-model" and fields["agentId"] == agent["id"]
    assert (fields["inputTokens"], fields["outputTokens"], fields["modelCalls"]) == (6, 2, 1)
    assert fields["sessionId"] == res.session_id and fields["userId"] == user.ok("GET", "/api/auth/me")["id"]
    assert fields["requestId"] == res.headers["x-request-id"] and fields["durationMs"] > 0
    assert SECRET_WORDS not in line.getMessage() and SECRET_WORDS not in repr(fields)
