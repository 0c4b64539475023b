"""OpenTelemetry traces (``core.tracing``): off without an OTLP endpoint; on, one server span per request
named after its route, the database's statements under it without their parameters' values, no query
string in its attributes, and a real OTLP/HTTP export to a local receiver."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agentloft.core import tracing, tracing_db
from agentloft.llm.providers import ModelSpec
from agentloft.llm.traced import TracedModel
from tests.fakes.otlp_receiver import Receiver
from tests.support import ApiClient, LiveApp, running_app
from tests.tracing_support import (
    all_text,
    descends_from,
    named,
    runtime_of,
    traced_app,
    wait_for_spans,
)

SECRET = "quokka-marmalade-7"
SPEC = ModelSpec(provider="openai", model="m", base_url="http://127.0.0.1:9/v1", api_key=None)


def test_off_without_an_endpoint(tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in tracing.ENDPOINT_VARS:
        monkeypatch.delenv(name, raising=False)
    live = next(running_app(tmp_path, template_db))
    try:
        rt = runtime_of(live)
        assert not rt.tracing.enabled and rt.tracing.provider is None
        assert isinstance(rt.tracing.tracer, trace.NoOpTracer)
        assert rt.models.instrument is None
        assert not isinstance(rt.models.model(SPEC), TracedModel)  # nothing wrapped: model calls pay nothing
        with live.client() as c:
            assert c.get("/api/health").status_code == 200
    finally:
        live.stop()


def test_on_every_model_is_wrapped_for_its_spans(traced: tuple[LiveApp, InMemorySpanExporter]) -> None:
    model = runtime_of(traced[0]).models.model(SPEC)
    assert isinstance(model, TracedModel) and model.model_name == "m"
    assert model.attributes["server.port"] == 9 and model.span_name == "chat m"


def test_the_environment_decides() -> None:
    assert not tracing.wanted({})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert tracing.wanted({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"})
    assert not tracing.wanted({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"})


def test_a_request_has_one_span_with_its_statements_under_it(traced: tuple[LiveApp, InMemorySpanExporter]) -> None:
    live, memory = traced
    with ApiClient(live.url) as c:
        r = c.post("/api/auth/signup", json={"username": SECRET, "password": "password123"})
        assert r.status_code == 201, r.text
        rid = r.headers["x-request-id"]
        spans = wait_for_spans(memory, lambda ss: bool(named(ss, "POST /api/auth/signup")))
    (request,) = named(spans, "POST /api/auth/signup")
    assert request.kind == trace.SpanKind.SERVER
    attrs = dict(request.attributes or {})
    assert attrs["http.route"] == "/api/auth/signup"
    assert attrs.get("http.status_code", attrs.get("http.response.status_code")) == 201
    assert attrs["agentloft.request_id"] == rid
    assert attrs["http.request.method"] == "POST" and attrs["url.path"] == "/api/auth/signup"
    scopes = {s.instrumentation_scope.name for s in spans if s.instrumentation_scope is not None}
    assert scopes == {"agentloft"}  # FastAPI's own telemetry stays off: one request span, ours
    statements = [s for s in spans if "db.statement" in (s.attributes or {}) or "db.query.text" in (s.attributes or {})]
    inserts = [s for s in statements if "INSERT INTO users" in all_text(s)]
    assert inserts, [all_text(s) for s in statements]
    assert all(descends_from(s, request, spans) for s in inserts)
    trace_id = request.context.trace_id if request.context else None
    assert all(s.context is not None and s.context.trace_id == trace_id for s in inserts)
    assert not any(SECRET in all_text(s) for s in spans)  # the username was a parameter, never the text
    assert {s.name for s in inserts} == {"INSERT users"}  # named by operation and table
    assert not any(str(live.data_dir) in all_text(s) for s in statements)  # never the SQLite file's path
    assert all((s.attributes or {}).get("db.system") in ("sqlite", "postgresql") for s in statements)


@pytest.mark.parametrize(("statement", "described"), [
    ("INSERT INTO users (id, name) VALUES (?, ?)", ("INSERT users", "INSERT", "users")),
    ("UPDATE agent_sessions SET title=? WHERE id = ?", ("UPDATE agent_sessions", "UPDATE", "agent_sessions")),
    ("DELETE FROM \"public\".\"documents\" WHERE id = $1", ("DELETE documents", "DELETE", "documents")),
    ("/* c */ SELECT a.id FROM agents AS a JOIN tools ON 1", ("SELECT agents", "SELECT", "agents")),
    ("select count(*) from\n  usage_records", ("SELECT usage_records", "SELECT", "usage_records")),
    ("INSERT OR REPLACE INTO kv VALUES (?)", ("INSERT kv", "INSERT", "kv")),
    ("SELECT 1", ("SELECT", "SELECT", None)),
    ("PRAGMA journal_mode=WAL", ("PRAGMA", "PRAGMA", None)),
    ("  ", ("SQL", "SQL", None)),
])
def test_a_statement_is_named_by_operation_and_table(statement: str, described: tuple[str, str, str | None]) -> None:
    assert tracing_db.describe(statement) == described


def test_an_unknown_path_and_a_query_string_stay_out(traced: tuple[LiveApp, InMemorySpanExporter]) -> None:
    live, memory = traced
    with live.client() as c:
        c.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
        assert c.get(f"/api/agent-sessions/search?q={SECRET}").status_code == 200
        assert c.get(f"/no/such/{SECRET}").status_code == 404
    spans = wait_for_spans(memory, lambda ss: bool(named(ss, "GET (unmatched)"))
                           and bool(named(ss, "GET /api/agent-sessions/search")))
    (search,) = named(spans, "GET /api/agent-sessions/search")
    assert any(str(v).endswith("/api/agent-sessions/search") for v in (search.attributes or {}).values())
    assert not any(f"q={SECRET}" in all_text(s) for s in spans)


def test_spans_reach_a_collector_over_otlp_http(traced: tuple[LiveApp, InMemorySpanExporter],
                                                 receiver: Receiver) -> None:
    live, _ = traced
    with ApiClient(live.url) as c:
        assert c.get("/api/health").status_code == 200
    span = receiver.wait_for_span("GET /api/health")
    assert span.resource["service.name"] == "agentloft"
    assert span.attributes["http.route"] == "/api/health"
    assert receiver.headers[0]["content-type"] == "application/x-protobuf"


def test_the_service_name_and_headers_come_from_the_sdk_variables(
    receiver: Receiver, tmp_path: Path, template_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_SERVICE_NAME", "agentloft-eu")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-collector-key=k1")
    for live, _ in traced_app(tmp_path, template_db):
        with ApiClient(live.url) as c:
            assert c.get("/api/health").status_code == 200
        span = receiver.wait_for_span("GET /api/health")
        assert span.resource["service.name"] == "agentloft-eu"
        assert receiver.headers[-1]["x-collector-key"] == "k1"
