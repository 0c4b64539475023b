"""Tests' view of a live app's traces: the app started with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at a
local OTLP receiver (``tests.fakes.otlp_receiver``), plus an in-memory exporter on its provider, so a test
reads the finished spans directly. Its fixtures (``receiver``, ``traced``) are offered to every test by the
root conftest; a test module that wants other settings overrides ``traced``."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.fakes.otlp_receiver import Receiver, start_receiver
from tests.support import LiveApp, start_app


def runtime_of(live: LiveApp) -> Any:
    return live.server.server.config.app.state.runtime


def receiving(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    """A receiver, and the environment that turns traces on toward it (exported every 50 ms)."""
    receiver, server = start_receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.url)
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def traced_app(tmp_path: Path, template_db: Path, **settings: Any) -> Iterator[tuple[LiveApp, InMemorySpanExporter]]:
    """A live app with traces on (the environment set by ``receiving``), and its spans in memory."""
    live = start_app(tmp_path / "data", template_db, **settings)
    memory = InMemorySpanExporter()
    provider = runtime_of(live).tracing.provider
    assert provider is not None, "traces should be on"
    provider.add_span_processor(SimpleSpanProcessor(memory))
    try:
        yield live, memory
    finally:
        live.stop()


def wait_for_spans(memory: InMemorySpanExporter, done: Callable[[list[ReadableSpan]], bool],
                   timeout: float = 10.0) -> list[ReadableSpan]:
    """The finished spans once ``done`` holds for them (a request's span ends after its last byte)."""
    deadline = time.monotonic() + timeout
    while True:
        spans = list(memory.get_finished_spans())
        if done(spans):
            return spans
        if time.monotonic() > deadline:
            raise AssertionError(f"spans never matched; got {[s.name for s in spans]}")
        time.sleep(0.01)


def named(spans: list[ReadableSpan], name: str) -> list[ReadableSpan]:
    return [s for s in spans if s.name == name]


def descends_from(span: ReadableSpan, ancestor: ReadableSpan, spans: list[ReadableSpan]) -> bool:
    """Whether ``span`` is below ``ancestor`` in the same trace."""
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    current: ReadableSpan | None = span
    target = ancestor.context.span_id if ancestor.context else None
    while current is not None and current.parent is not None:
        if current.parent.span_id == target:
            return True
        current = by_id.get(current.parent.span_id)
    return False


def all_text(span: ReadableSpan) -> str:
    """Every attribute and event of ``span`` as one string, to look for words that must not be there."""
    parts = [span.name, repr(dict(span.attributes or {}))]
    parts += [f"{e.name} {dict(e.attributes or {})!r}" for e in span.events]
    return "\n".join(parts)


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch) -> Iterator[Receiver]:
    """``receiving`` as a fixture."""
    yield from receiving(monkeypatch)


@pytest.fixture
def traced(receiver: Receiver, tmp_path: Path, template_db: Path) -> Iterator[tuple[LiveApp, InMemorySpanExporter]]:
    """``traced_app`` on the default settings, toward ``receiver``."""
    yield from traced_app(tmp_path, template_db)
