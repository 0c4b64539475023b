"""Request ids: taken from a sane ``X-Request-ID`` or made, returned, in every error body and in the one log
line per request; the JSON log format parses."""

from __future__ import annotations

import io
import json
import logging
import logging.config

import pytest

from agentloft.core.logs import log_config
from agentloft.core.requests import UNMATCHED
from tests.support import ApiClient

REQUEST_LOGGER = "agentloft.requests"


def _request_lines(caplog: pytest.LogCaptureFixture, request_id: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == REQUEST_LOGGER and r.__dict__.get("requestId") == request_id]


def test_a_sane_incoming_id_is_echoed_and_carried_in_the_error_body(anon: ApiClient) -> None:
    r = anon.get("/api/auth/me", headers={"X-Request-ID": "lb-7f3a.42:x_Y"})
    assert r.status_code == 401
    assert r.headers["x-request-id"] == "lb-7f3a.42:x_Y"
    assert r.json()["error"]["requestId"] == "lb-7f3a.42:x_Y"


@pytest.mark.parametrize("given", ["a" * 65, "has space", "semi;colon", "", "ünï"])
def test_an_insane_incoming_id_is_replaced_by_a_new_one(anon: ApiClient, given: str) -> None:
    r = anon.get("/api/nope", headers={"X-Request-ID": given.encode()})
    made = r.headers["x-request-id"]
    assert made != given and len(made) == 32 and int(made, 16) >= 0
    assert r.json()["error"]["requestId"] == made


def test_each_request_without_an_id_gets_its_own(anon: ApiClient) -> None:
    first, second = anon.get("/healthz"), anon.get("/healthz")
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


def test_a_csrf_refusal_carries_the_id_too(user: ApiClient) -> None:
    r = user.post("/api/agent-sessions", json={}, headers={"X-CSRF-Token": "wrong"})
    assert r.status_code == 403 and r.json()["error"]["code"] == "csrf_failed"
    assert r.json()["error"]["requestId"] == r.headers["x-request-id"]


def test_one_log_line_per_request_with_route_template_status_and_user(
    user: ApiClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=REQUEST_LOGGER)
    me = user.get("/api/auth/me?secret=hunter2", headers={"X-Request-ID": "find-me-1"})
    missing = user.get("/api/agent-sessions/as_nope_nope", headers={"X-Request-ID": "find-me-2"})
    unknown = user.get("/api/no/such/as_123", headers={"X-Request-ID": "find-me-3"})
    (line,) = _request_lines(caplog, "find-me-1")
    assert (line.method, line.route, line.status) == ("GET", "/api/auth/me", 200)  # type: ignore[attr-defined]
    assert line.userId == str(me.json()["id"]) and line.durationMs > 0  # type: ignore[attr-defined]
    assert "hunter2" not in line.getMessage() and "hunter2" not in json.dumps(line.__dict__, default=str)
    (line,) = _request_lines(caplog, "find-me-2")
    assert missing.status_code == 404
    assert (line.route, line.status) == ("/api/agent-sessions/{session_id}", 404)  # type: ignore[attr-defined]
    assert "as_nope_nope" not in line.getMessage()
    (line,) = _request_lines(caplog, "find-me-3")
    assert unknown.status_code == 404 and line.route == UNMATCHED  # type: ignore[attr-defined]
    assert line.userId is None  # type: ignore[attr-defined]  # nothing asked who it was


def _configured_output(fmt: str) -> tuple[logging.Logger, io.StringIO]:
    config = log_config(fmt, "info")  # type: ignore[arg-type]
    out = io.StringIO()
    config["handlers"]["stderr"]["stream"] = out
    config["root"]["handlers"] = []
    config["loggers"]["agentloft.test_logs"] = {"handlers": ["stderr"], "level": "INFO", "propagate": False}
    logging.config.dictConfig(config)
    return logging.getLogger("agentloft.test_logs"), out


def test_json_lines_parse_and_carry_the_extra_fields() -> None:
    root_handlers = logging.getLogger().handlers[:]
    try:
        logger, out = _configured_output("json")
        logger.info("turn %s", "done", extra={"outcome": "complete", "tokens": 12})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("it failed")
    finally:
        logging.getLogger().handlers[:] = root_handlers
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["message"] == "turn done" and first["level"] == "INFO"
    assert first["outcome"] == "complete" and first["tokens"] == 12 and first["requestId"] == "-"
    assert first["logger"] == "agentloft.test_logs" and first["time"].endswith("+00:00")
    assert second["level"] == "ERROR" and "ValueError: boom" in second["exc"]


def test_text_lines_name_the_request_id() -> None:
    root_handlers = logging.getLogger().handlers[:]
    try:
        logger, out = _configured_output("text")
        logger.info("hello", extra={"requestId": "abc123"})
    finally:
        logging.getLogger().handlers[:] = root_handlers
    assert out.getvalue().rstrip().endswith("INFO agentloft.test_logs [abc123] hello")


@pytest.mark.parametrize(("language", "words"), [("en", "Reference: "), ("zh-CN", "参考编号：")])
def test_the_html_error_page_shows_the_request_id(anon: ApiClient, language: str, words: str) -> None:
    r = anon.get("/no-such-page", headers={"Accept": "text/html", "Accept-Language": language,
                                            "X-Request-ID": "page-ref-7"})
    assert r.status_code == 404 and 'data-testid="error-page"' in r.text
    assert f'data-testid="error-reference">{words}page-ref-7</p>' in r.text
