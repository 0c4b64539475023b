"""OpenTelemetry traces, exported over OTLP/HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``) is set.

``Tracing`` is what the rest of the app holds (``rt.tracing``), built like ``core.metrics``: with no
endpoint the base class, whose tracer is the API's no-op tracer and whose hooks do nothing, so the SDK is
never imported and a turn pays a few no-op calls. ``build(settings)`` picks the one to use.

On, the SDK does the reading: the exporter takes its endpoint, headers, timeout, compression and
certificates from the standard ``OTEL_EXPORTER_OTLP_*`` variables, the provider its sampler from
``OTEL_TRACES_SAMPLER`` / ``OTEL_TRACES_SAMPLER_ARG``, the resource ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``, the batch processor ``OTEL_BSP_*``; only the service name's default is ours
(``agentloft`` rather than the SDK's ``unknown_service``). ``OTEL_SDK_DISABLED=true`` turns it all off.

What is traced, and where:

- each HTTP request: one server span (``wrap``: the maintained ASGI instrumentation, with its
  per-chunk ``send``/``receive`` spans left out, since a streamed reply has thousands), named after the
  route template (``POST /api/agents/{slug}/chat``, ``(unmatched)`` for unknown paths) and carrying the
  request id; an incoming ``traceparent`` is continued (an A2A caller's trace goes on here);
- each database statement (``instrument_engine``: ``core.tracing_db``'s cursor hooks, see there why not
  the generic SQLAlchemy instrumentation), named by operation and table (``INSERT agent_messages``), its
  text with placeholders, never the parameters' values;
- each chat turn (``chat.engine``), and under it pydantic-ai's own spans for the agent run, each model
  call and each tool call (``model_instrumentation``); tool spans get the tool type and outcome
  (``chat.toolset``);
- outgoing A2A and MCP requests carry the W3C ``traceparent`` of the span they run under
  (``traced_request``; for MCP ``trace_headers_from_meta``, see there why).

Nothing a user wrote goes into a span unless ``AGENTLOFT_TRACE_CONTENT=true``: then pydantic-ai records
the messages, tool arguments and results. Query strings are cut from the request span's URL attributes
either way (a search's words travel there).

Decided: the app's provider is set as the process's global one only if none is set yet, so libraries that
trace through the global API (a2a-sdk) export too, while tests that build several apps in one process keep
each app's spans with its own provider (everything of ours is handed the provider explicitly). A turn that
runs on after its request has answered stays a child of the request's span (its task inherits the
context), in the same trace.

``agentloft serve --workers N``: each worker builds its app, hence its own provider and exporter.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace

from agentloft.core.requests import UNMATCHED, current_request_id, route_template

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from sqlalchemy.ext.asyncio import AsyncEngine

    from agentloft.core.runtime import Runtime
    from agentloft.core.settings import Settings

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
SERVICE_NAME = "agentloft"
# Request span attributes that may hold the query string, and what they keep.
_URL_ATTRIBUTES = ("http.url", "http.target", "url.full")


def wanted(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the environment asks for traces: an OTLP endpoint set, the SDK not disabled."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return any(environ.get(name, "").strip() for name in ENDPOINT_VARS)


class Tracing:
    """Traces off: the API's no-op tracer, and hooks that do nothing."""

    enabled = False
    content = False
    provider: TracerProvider | None = None

    def __init__(self) -> None:
        self.tracer: trace.Tracer = trace.NoOpTracer()

    def wrap(self, app: Any) -> Any:
        """The ASGI app with a server span around each HTTP request (here: the app itself)."""
        return app

    def instrument_engine(self, engine: AsyncEngine) -> None:
        """Trace ``engine``'s statements."""

    def model_instrumentation(self) -> InstrumentationSettings | None:
        """pydantic-ai's instrumentation settings for the agents (None: not instrumented)."""
        return None

    def start(self) -> None:
        """Begin exporting."""

    def shutdown(self) -> None:
        """Export what is left and stop."""


def inject(headers: MutableMapping[str, str]) -> None:
    """Add the current span's ``traceparent`` (and ``tracestate``) to outgoing ``headers``; nothing when no
    span records (traces off, or not sampled upstream in a way that propagates)."""
    propagate.inject(headers)


TurnDone = Callable[..., None]


@contextmanager
def traced_turn(tracing: Tracing, *, session_id: str, agent: str | None, model: str, source: str,
                message_id: str) -> Iterator[TurnDone]:
    """A ``chat turn`` span around a turn; the caller says how it ended (``done(outcome, failed=...)``).
    Attributes: ids and names an admin chose, never what anyone wrote. A turn cancelled (a shutdown, a
    caller's timeout) ends with outcome ``cancelled``, one that raised with ``crashed``."""
    attributes = {"agentloft.session_id": session_id, "agentloft.agent": agent or "(chat)",
                  "gen_ai.request.model": model, "agentloft.turn.source": source,
                  "agentloft.message_id": message_id}
    with tracing.tracer.start_as_current_span("chat turn", attributes=attributes, record_exception=False,
                                              set_status_on_exception=False) as span:

        def done(outcome: str, *, failed: bool = False) -> None:
            span.set_attribute("agentloft.turn.outcome", outcome)
            if failed:
                span.set_status(trace.StatusCode.ERROR)

        try:
            yield done
        except asyncio.CancelledError:
            span.set_attribute("agentloft.turn.outcome", "cancelled")
            raise
        except Exception:
            span.set_attribute("agentloft.turn.outcome", "crashed")
            span.set_status(trace.StatusCode.ERROR)
            raise


def tool_outcome(tool_type: str, success: bool, code: object) -> None:
    """The tool type and outcome on the current tool call's span (pydantic-ai's ``execute_tool``, whose
    own status never shows a failure: ours come back as results): ``success``, the result's code, or
    ``failed``. Nothing when no span records."""
    span = trace.get_current_span()
    if span.is_recording():
        outcome = "success" if success else (code if isinstance(code, str) else "failed")
        span.set_attributes({"agentloft.tool.type": tool_type, "agentloft.tool.outcome": outcome})
        if not success:
            span.set_status(trace.StatusCode.ERROR)


async def traced_request(request: Any) -> None:
    """An httpx request hook (httpx or httpx2) that adds the current span's trace context to the request:
    an A2A call then continues the caller's trace on the callee."""
    inject(request.headers)


_TRACE_KEYS = ("traceparent", "tracestate")


async def trace_headers_from_meta(request: Any) -> None:
    """An httpx2 request hook for MCP: copies the trace context the MCP SDK put into the JSON-RPC
    request's ``params._meta`` (SEP-414, injected in the calling tool's context) into ``traceparent`` /
    ``tracestate`` headers. The header cannot be set from the caller's context: a connection's requests
    are sent by its own long-lived task, whose context is not the tool call's. Costs one substring search
    per request while traces are off (the SDK then injects nothing)."""
    body = request.content
    if not isinstance(body, bytes) or b'"traceparent"' not in body:
        return
    try:
        meta = json.loads(body).get("params", {}).get("_meta", {})
    except (ValueError, AttributeError):
        return
    for key in _TRACE_KEYS:
        value = meta.get(key) if isinstance(meta, dict) else None
        if isinstance(value, str):
            request.headers[key] = value


class SdkTracing(Tracing):
    """Traces on: the SDK's provider, its batch processor and the OTLP/HTTP exporter."""

    enabled = True

    def __init__(self, *, content: bool) -> None:
        from opentelemetry.sdk.resources import SERVICE_NAME as SERVICE_NAME_KEY
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider

        resource = Resource.create()
        if str(resource.attributes.get(SERVICE_NAME_KEY, "")).startswith("unknown_service"):
            resource = resource.merge(Resource({SERVICE_NAME_KEY: SERVICE_NAME}))
        self.content = content
        self.provider = TracerProvider(resource=resource)  # its sampler from OTEL_TRACES_SAMPLER
        self.tracer = self.provider.get_tracer("agentloft")
        self._exporting = False

    def wrap(self, app: Any) -> Any:
        from opentelemetry.instrumentation.asgi import OpenTelemetryMiddleware
        from opentelemetry.util.http import get_excluded_urls

        return OpenTelemetryMiddleware(
            _NamedByRoute(app), tracer_provider=self.provider, exclude_spans=["receive", "send"],
            excluded_urls=get_excluded_urls("ASGI"), server_request_hook=_request_started,
            default_span_details=_span_details,
        )

    def instrument_engine(self, engine: AsyncEngine) -> None:
        from agentloft.core.tracing_db import StatementTracer

        StatementTracer(self.tracer, engine.sync_engine)

    def model_instrumentation(self) -> InstrumentationSettings | None:
        from pydantic_ai.models.instrumented import InstrumentationSettings

        # Without ``model_request_parameters``: a second dump of every tool's schema (the Assistant's
        # come to ~9 kB a model call), serialised and exported on every call, while
        # ``gen_ai.tool.definitions`` already names and describes the tools.
        return InstrumentationSettings(tracer_provider=self.provider, include_content=self.content,
                                       include_binary_content=self.content,
                                       include_model_request_parameters=False)

    def start(self) -> None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        assert self.provider is not None
        if self._exporting:
            return
        self._exporting = True
        self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
            trace.set_tracer_provider(self.provider)

    def shutdown(self) -> None:
        assert self.provider is not None
        self.provider.shutdown()  # flushes the batch processor: the last spans go out


class _NamedByRoute:
    """Names the request's span after the matched route when the response starts: routing has run by
    then, and the ASGI middleware, which only knows the method when the request begins, ends the span
    with the response's last message."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        span = trace.get_current_span()

        async def named_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start" and span.is_recording():
                route = route_template(scope)
                span.update_name(f"{scope.get('method', 'HTTP')} {route}")
                if route != UNMATCHED:
                    span.set_attribute("http.route", route)
            await send(message)

        await self.app(scope, receive, named_send)


def _span_details(scope: Mapping[str, Any]) -> tuple[str, dict[str, str]]:
    """The span's first name: the method (the route is known only after routing, ``_NamedByRoute``)."""
    return str(scope.get("method") or "HTTP"), {}


def _request_started(span: trace.Span, scope: Mapping[str, Any]) -> None:
    """The request id on the span (a log line's id finds its trace); the query string off its URLs."""
    if not span.is_recording():
        return
    rid = current_request_id()
    if rid:
        span.set_attribute("agentloft.request_id", rid)
    attributes: Mapping[str, Any] = getattr(span, "attributes", None) or {}
    for key in _URL_ATTRIBUTES:
        value = attributes.get(key)
        if isinstance(value, str) and "?" in value:
            span.set_attribute(key, value.split("?", 1)[0])
    if "url.query" in attributes:
        span.set_attribute("url.query", "")


def build(settings: Settings) -> Tracing:
    """The tracing the environment asks for."""
    if not wanted():
        return Tracing()
    return SdkTracing(content=settings.trace_content)


async def startup(rt: Runtime) -> None:
    """Begin exporting, and trace the database's statements."""
    if rt.tracing.enabled:
        rt.tracing.instrument_engine(rt.db.engine)
        rt.tracing.start()


async def shutdown(rt: Runtime) -> None:
    """Flush the last spans (in a thread: the export may wait on the collector)."""
    if rt.tracing.enabled:
        await asyncio.to_thread(rt.tracing.shutdown)
