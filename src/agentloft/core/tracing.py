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

- each HTTP request: one server span (``wrap``: ``RequestSpans``, see there why not the maintained ASGI
  instrumentation), named after the route template (``POST /api/agents/{slug}/chat``, ``(unmatched)``
  for unknown paths) and carrying the request id; an incoming ``traceparent`` is continued (an A2A
  caller's trace goes on here);
- each database statement (``instrument_engine``: ``core.tracing_db``'s cursor hooks, see there why not
  the generic SQLAlchemy instrumentation), named by operation and table (``INSERT agent_messages``), its
  text with placeholders, never the parameters' values;
- each chat turn (``chat.engine``): a ``chat turn`` span (``traced_turn``);
- each model call: a ``chat <model>`` span from the wrapper ``ModelClients.model`` puts around every
  model it builds while traces are on (``llm.traced``, see there why not pydantic-ai's
  instrumentation, which is off: no agent-run span either, ``chat turn`` says it); a title's and a model
  test's calls too, as they go through the same models;
- each tool call: an ``execute_tool <name>`` span (``traced_tool``, from ``chat.toolset``) with the tool's
  name, call id, type and outcome;
- outgoing A2A and MCP requests carry the W3C ``traceparent`` of the span they run under, the tool call's
  (``traced_request``; for MCP ``trace_headers_from_meta``, see there why).

Nothing a user wrote goes into a span unless ``AGENTLOFT_TRACE_CONTENT=true``: then the model spans get
the messages and instructions, the tool spans the arguments and results, and failures their messages.
Query strings never go into the request's span either way (a search's words travel there).

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
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from opentelemetry import propagate, trace
from pydantic_core import to_json

from agentloft.core.requests import UNMATCHED, current_request_id, route_template

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from sqlalchemy.ext.asyncio import AsyncEngine

    from agentloft.core.runtime import Runtime
    from agentloft.core.settings import Settings

ENDPOINT_VARS = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
SERVICE_NAME = "agentloft"


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

    def model_instrumentation(self) -> SpanOptions | None:
        """What the model calls' spans need (``llm.traced``); None: the models are not wrapped."""
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


@dataclass(frozen=True)
class SpanOptions:
    """What a span of a model call needs: the tracer, and whether content goes in."""

    tracer: trace.Tracer
    content: bool


def failed(span: trace.Span, exc: BaseException, *, content: bool) -> None:
    """Mark ``span`` as failed by ``exc``: its type always (``error.type``, an ``exception`` event), its
    message only with content on (a provider's or a tool's error may quote what was sent)."""
    kind = type(exc)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    span.set_attribute("error.type", name)
    if content:
        span.record_exception(exc)
        span.set_status(trace.StatusCode.ERROR, f"{kind.__name__}: {exc}")
    else:
        span.add_event("exception", {"exception.type": name})
        span.set_status(trace.StatusCode.ERROR, kind.__name__)


def as_json(value: Any) -> str:
    """``value`` as span content (JSON; what JSON cannot hold as its ``repr``)."""
    return to_json(value, fallback=repr).decode()


@contextmanager
def traced_tool(tracing: Tracing, *, name: str, call_id: str | None, tool_type: str, arguments: Any,
                passing: tuple[type[BaseException], ...] = ()) -> Iterator[trace.Span]:
    """An ``execute_tool <name>`` span around a tool call, current while it runs (so an A2A or MCP request
    it makes carries its trace context): the tool's name, call id and type (``agentloft.tool.type``), the
    arguments only with content on; ``tool_outcome`` adds how it ended. An exception of ``passing`` (a
    pause for approval, a failed result raised as such: control flow, said by the outcome) leaves the
    span as it is; any other marks it failed. For traces on only: the caller skips it while they are
    off."""
    attributes: dict[str, Any] = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
                                  "agentloft.tool.type": tool_type}
    if call_id:
        attributes["gen_ai.tool.call.id"] = call_id
    if tracing.content:
        attributes["gen_ai.tool.call.arguments"] = as_json(arguments)
    with tracing.tracer.start_as_current_span(f"execute_tool {name}", attributes=attributes,
                                              record_exception=False, set_status_on_exception=False) as span:
        try:
            yield span
        except passing:
            raise
        except asyncio.CancelledError:
            span.set_attribute("agentloft.tool.outcome", "cancelled")
            raise
        except Exception as exc:
            if span.is_recording():
                span.set_attribute("agentloft.tool.outcome", "crashed")
                failed(span, exc, content=tracing.content)
            raise


def tool_outcome(tracing: Tracing, outcome: str | None, *, success: bool = True, code: object = None,
                 result: Callable[[], Any] | None = None) -> None:
    """How the current tool call (``traced_tool``'s span) ended: ``outcome`` when given (a pause:
    ``approval_required``, ``deferred``), else ``success``, the failed result's code, or ``failed``; a
    failure sets an error status (ours come back as results, never as exceptions). With content on,
    ``result()`` (what the model gets, or the error) goes in too. Nothing when no span records."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    if outcome is None:
        outcome = "success" if success else (code if isinstance(code, str) else "failed")
    span.set_attribute("agentloft.tool.outcome", outcome)
    if not success:
        span.set_status(trace.StatusCode.ERROR)
    if tracing.content and result is not None:
        span.set_attribute("gen_ai.tool.call.result", as_json(result()))


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
        from opentelemetry.util.http import get_excluded_urls

        return RequestSpans(app, self.tracer, get_excluded_urls("ASGI"))

    def instrument_engine(self, engine: AsyncEngine) -> None:
        from agentloft.core.tracing_db import StatementTracer

        StatementTracer(self.tracer, engine.sync_engine)

    def model_instrumentation(self) -> SpanOptions | None:
        return SpanOptions(tracer=self.tracer, content=self.content)

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


class RequestSpans:
    """A SERVER span around each HTTP request, current while the app handles it (so the statements and
    a turn it starts are its children), continuing an incoming ``traceparent`` (or whatever
    ``OTEL_PROPAGATORS`` asks for). ``OTEL_PYTHON_ASGI_EXCLUDED_URLS`` (or ``OTEL_PYTHON_EXCLUDED_URLS``)
    leaves paths out, as with the maintained ASGI instrumentation.

    Ours rather than that instrumentation's middleware: that one wraps every message sent (a streamed
    reply sends one per chunk) to update its span, re-reads the response headers each time and builds
    a dozen attributes from the scope; a traced chat turn paid for it on every chunk. Here the wrapper
    of ``send`` only looks for the response's start (its status), and the span, named after the route
    template once routing has run (``POST /api/agents/{slug}/chat``; ``(unmatched)`` for unknown paths),
    ends when the app returns, after the last byte. Attributes: method, scheme, path (never the query
    string: a search's words travel there), route, status and the request id (a log line's id finds its
    trace). A 5xx answer or an exception sets an error status (the exception's type only)."""

    def __init__(self, app: Any, tracer: trace.Tracer, excluded: Any = None) -> None:
        self.app = app
        self.tracer = tracer
        self.excluded = excluded

    async def __call__(self, scope: MutableMapping[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or (self.excluded is not None and self.excluded.url_disabled(
                str(scope.get("path", "")))):
            await self.app(scope, receive, send)
            return
        method = str(scope.get("method") or "HTTP")
        carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers") or ()}
        attributes: dict[str, Any] = {"http.request.method": method, "url.scheme": scope.get("scheme", "http"),
                                      "url.path": scope.get("path", "")}
        rid = current_request_id()
        if rid:
            attributes["agentloft.request_id"] = rid
        status: list[int] = []

        async def status_send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
            await send(message)

        with self.tracer.start_as_current_span(method, context=propagate.extract(carrier),
                                               kind=trace.SpanKind.SERVER, attributes=attributes,
                                               record_exception=False, set_status_on_exception=False) as span:
            try:
                await self.app(scope, receive, status_send)
            except BaseException as exc:
                span.set_status(trace.StatusCode.ERROR, type(exc).__name__)
                raise
            finally:
                _named(span, scope, method, status)


def _named(span: trace.Span, scope: MutableMapping[str, Any], method: str, status: list[int]) -> None:
    """The request's span named after its route, with the answer's status (a request that never
    answered has none)."""
    route = route_template(scope)
    span.update_name(f"{method} {route}")
    if route != UNMATCHED:
        span.set_attribute("http.route", route)
    if status:
        span.set_attribute("http.response.status_code", status[0])
        if status[0] >= 500:
            span.set_status(trace.StatusCode.ERROR)


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
