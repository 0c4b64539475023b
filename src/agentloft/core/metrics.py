"""Prometheus metrics (``AGENTLOFT_METRICS=true``), through the official ``prometheus-client``.

``Metrics`` is what the rest of the app calls: a handful of methods, one per event (a request answered, a
turn started or finished, its first text, a tool call, a stream follower come or gone, a Redis error).
With metrics off the app holds the base class, whose methods do nothing, so no caller ever asks whether
metrics are on and a turn pays one no-op call per event. ``build(settings)`` picks the one to use.

The families (all prefixed ``agentloft_``):

- ``http_requests_total{method,route,status}`` and ``http_request_duration_seconds{method,route}``: the
  route *template* (``/api/agents/{slug}/chat``), never the raw path, and one ``(unmatched)`` route for
  every unknown address, so a scanner cannot grow the series (``core.requests``);
- ``turns_started_total{source}``, ``turns_finished_total{source,outcome}`` (``complete``, ``failed``,
  ``stopped``, ``awaiting_approval``, ``interrupted``), ``turn_first_text_seconds`` (from the request that
  started the turn to its first text) and ``turn_duration_seconds{outcome}``;
- ``model_calls_total{model}`` and ``model_tokens_total{model,kind}`` (``kind``: ``input`` | ``output``),
  ``model`` being the provider's model name an admin configured (``gpt-4o-mini``): bounded by the
  configured models, and no user's words;
- ``tool_calls_total{tool_type,outcome}``: the tool *type* (``http``, ``python``), which code defines, not
  the tool's slug an admin typed; ``outcome`` is ``success``, ``failed``, or the wrapper's own
  ``invalid_input`` / ``tool_timeout`` / ``tool_crashed`` / ``approval_required``;
- ``approvals_pending``: tool calls waiting for a user's answer, counted in the database at scrape time
  (one indexed count: ``ix_chat_approvals_pending``), so every worker says the same;
- ``stream_followers``: HTTP responses following a reply's stream now;
- ``db_connections_in_use``: connections checked out of the database pool now;
- ``redis_errors_total``: times Redis could not be reached (a request answered 503, a buffer write, a lease).

No label holds a user id, a session id or anything a user wrote: every label value comes from a fixed
set or from what an admin configured.

Several workers (``agentloft serve --workers N``): ``serve`` points ``PROMETHEUS_MULTIPROC_DIR`` at
``<data dir>/metrics`` (emptied at each start) before any worker imports the client, which then keeps
each worker's values in files there; a scrape answered by any worker sums them (``MultiProcessCollector``).
The gauges say ``livesum``: the sum over the workers alive now. A worker that stops marks its files
dead. One process keeps its values in memory, in a registry of its own per app (tests run several apps
in one process).
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import event

from agentloft.core.errors import Forbidden, Unauthorized

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric
    from sqlalchemy.ext.asyncio import AsyncEngine

    from agentloft.core.settings import Settings

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# Tool-call outcomes that keep their own label: the wrapper's codes (``tools.runner``); any other failure
# is ``failed``, so a tool type's own codes cannot add series.
_OWN_OUTCOMES = frozenset({"invalid_input", "tool_timeout", "tool_crashed", "approval_required"})
# Seconds: requests are mostly milliseconds; a streamed chat response lasts as long as its reply.
_REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)
_TURN_BUCKETS = (0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600)


class Metrics:
    """The events the app reports. This base records nothing: metrics are off."""

    enabled = False

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        """One HTTP request answered (``core.requests.RequestIds``'s observer)."""

    def turn_started(self, source: str) -> None:
        """A turn began to run (``chat`` or ``a2a``)."""

    def first_text(self, seconds: float) -> None:
        """A turn's first text went to its readers, ``seconds`` after the request that started it."""

    def turn_finished(self, *, source: str, outcome: str, seconds: float, model: str, model_calls: int,
                      input_tokens: int, output_tokens: int) -> None:
        """A turn was saved: how it ended, how long it took, what its run asked of the model."""

    def tool_call(self, tool_type: str, success: bool, code: object) -> None:
        """A tool call ended (``code``: the result's ``metadata.code``)."""

    def follower(self, delta: int) -> None:
        """A stream follower came (+1) or went (-1)."""

    def redis_error(self) -> None:
        """Redis could not be reached for something this process needed."""

    def watch_pool(self, engine: AsyncEngine) -> None:
        """Count ``engine``'s connections in use."""

    def exposition(self, approvals_pending: int) -> bytes:
        """The text a scrape gets."""
        return b""

    def close(self) -> None:
        """The process stops serving (its live gauges leave the sums)."""


class PrometheusMetrics(Metrics):
    """The metrics kept by ``prometheus-client``: in this app's own registry, or in the multiprocess
    files of ``PROMETHEUS_MULTIPROC_DIR`` when ``agentloft serve`` runs several workers."""

    enabled = True

    def __init__(self) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.multiprocess = bool(os.environ.get(MULTIPROC_ENV))
        self.registry: CollectorRegistry | None = None if self.multiprocess else CollectorRegistry()
        reg: Any = self.registry
        self._requests = Counter("agentloft_http_requests", "HTTP requests answered, by route template and status",
                                 ["method", "route", "status"], registry=reg)
        self._latency = Histogram("agentloft_http_request_duration_seconds",
                                  "Time to the last byte of each HTTP response, by route template",
                                  ["method", "route"], buckets=_REQUEST_BUCKETS, registry=reg)
        self._started = Counter("agentloft_turns_started", "Chat turns started", ["source"], registry=reg)
        self._finished = Counter("agentloft_turns_finished", "Chat turns finished, by outcome",
                                 ["source", "outcome"], registry=reg)
        self._first_text = Histogram("agentloft_turn_first_text_seconds",
                                     "From the request that started a turn to its first text",
                                     buckets=_TURN_BUCKETS, registry=reg)
        self._duration = Histogram("agentloft_turn_duration_seconds", "From a turn's request to its saved end",
                                   ["outcome"], buckets=_TURN_BUCKETS, registry=reg)
        self._model_calls = Counter("agentloft_model_calls", "Requests sent to a model", ["model"], registry=reg)
        self._tokens = Counter("agentloft_model_tokens", "Tokens the model counted", ["model", "kind"],
                               registry=reg)
        self._tools = Counter("agentloft_tool_calls", "Tool calls, by tool type and outcome",
                              ["tool_type", "outcome"], registry=reg)
        self._followers = Gauge("agentloft_stream_followers", "HTTP responses following a reply's stream",
                                multiprocess_mode="livesum", registry=reg)
        self._pool = Gauge("agentloft_db_connections_in_use", "Database connections checked out of the pool",
                           multiprocess_mode="livesum", registry=reg)
        self._redis_errors = Counter("agentloft_redis_errors", "Times Redis could not be reached", registry=reg)

    def request(self, method: str, route: str, status: int, seconds: float) -> None:
        self._requests.labels(method, route, str(status)).inc()
        self._latency.labels(method, route).observe(seconds)

    def turn_started(self, source: str) -> None:
        self._started.labels(source).inc()

    def first_text(self, seconds: float) -> None:
        self._first_text.observe(seconds)

    def turn_finished(self, *, source: str, outcome: str, seconds: float, model: str, model_calls: int,
                      input_tokens: int, output_tokens: int) -> None:
        self._finished.labels(source, outcome).inc()
        self._duration.labels(outcome).observe(seconds)
        if model_calls:
            self._model_calls.labels(model).inc(model_calls)
        if input_tokens:
            self._tokens.labels(model, "input").inc(input_tokens)
        if output_tokens:
            self._tokens.labels(model, "output").inc(output_tokens)

    def tool_call(self, tool_type: str, success: bool, code: object) -> None:
        outcome = "success" if success else (code if isinstance(code, str) and code in _OWN_OUTCOMES else "failed")
        self._tools.labels(tool_type, outcome).inc()

    def follower(self, delta: int) -> None:
        self._followers.inc(delta)

    def redis_error(self) -> None:
        self._redis_errors.inc()

    def watch_pool(self, engine: AsyncEngine) -> None:
        pool = engine.sync_engine.pool
        event.listen(pool, "checkout", lambda *_: self._pool.inc())
        event.listen(pool, "checkin", lambda *_: self._pool.dec())

    def exposition(self, approvals_pending: int) -> bytes:
        from prometheus_client import CollectorRegistry, generate_latest
        from prometheus_client.metrics_core import GaugeMetricFamily

        if self.registry is not None:
            registry = self.registry
        else:
            from prometheus_client.multiprocess import MultiProcessCollector

            registry = CollectorRegistry()
            MultiProcessCollector(registry)
        pending = GaugeMetricFamily("agentloft_approvals_pending", "Tool calls waiting for a user's answer",
                                    value=approvals_pending)
        scrape_time = CollectorRegistry()
        scrape_time.register(_Fixed([pending]))
        return generate_latest(registry) + generate_latest(scrape_time)

    def close(self) -> None:
        if self.multiprocess:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(os.getpid())


class _Fixed:
    """A collector of families computed before the scrape (the database's counts)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterable[Metric]:
        return self.families


def build(settings: Settings) -> Metrics:
    """The app's metrics: recorded when ``AGENTLOFT_METRICS`` is on, else the no-op base (``prometheus-client``
    is then never imported)."""
    return PrometheusMetrics() if settings.metrics else Metrics()


def prepare_multiprocess_dir(data_dir: Path) -> Path:
    """``<data dir>/metrics``, emptied, for ``agentloft serve --workers N``: what workers of an earlier run
    left there would otherwise be summed in forever."""
    path = data_dir / "metrics"
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(mode=0o700, parents=True)
    return path


def is_loopback(host: str | None) -> bool:
    try:
        return host is not None and ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# Headers a reverse proxy adds to what it passes on. A request that carries one came through a proxy,
# even when the connection is from loopback: a proxy on the same machine that is not named in
# ``AGENTLOFT_FORWARDED_ALLOW_IPS`` would otherwise make every client on the internet look local.
FORWARDING_HEADERS = ("forwarded", "x-forwarded-for", "x-real-ip")


def check_scraper(client_host: str | None, authorization: str | None, token: str | None, *,
                  forwarded: bool) -> None:
    """Let a scrape through, or refuse it: a loopback client passes unless the request was ``forwarded``
    (it carries one of ``FORWARDING_HEADERS``); any other needs ``Authorization: Bearer
    <AGENTLOFT_METRICS_TOKEN>`` (``401 metrics_token_required`` when it is missing or wrong), and without
    a token configured there is none to give (``403 metrics_loopback_only``)."""
    if is_loopback(client_host) and not forwarded:
        return
    if not token:
        raise Forbidden("metrics are answered only to this machine; set AGENTLOFT_METRICS_TOKEN to scrape "
                        "from elsewhere", code="metrics_loopback_only")
    scheme, _, given = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode(), token.encode()):
        raise Unauthorized("a valid metrics token is required (Authorization: Bearer …)",
                           code="metrics_token_required", headers={"WWW-Authenticate": "Bearer"})
