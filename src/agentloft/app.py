"""``create_app(settings)``: routers, middleware, error handlers and the lifespan. No import-time effects.

Start-up order: migrate the schema, build the runtime (database, secret box, shared services), run each
domain's start-up hook (bootstrap model, tool registry, defaults, interrupted runs), then serve.
"""

from __future__ import annotations

import gc
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from fastapi import APIRouter, FastAPI
from fastapi.telemetry import TelemetryConfig
from starlette.types import ASGIApp

from agentloft import __version__, defaults
from agentloft.a2a import lifecycle as a2a_lifecycle
from agentloft.a2a import router as a2a_router
from agentloft.a2a.server import A2AServers
from agentloft.agents import router as agents_router
from agentloft.audit import lifecycle as audit_lifecycle
from agentloft.audit import router as audit_router
from agentloft.auth import router as auth_router
from agentloft.auth.csrf import CSRFMiddleware
from agentloft.auth.throttle import CounterStore, LoginThrottle, MemoryCounters
from agentloft.chat import lifecycle as chat_lifecycle
from agentloft.chat import router as chat_router
from agentloft.chat.buffers import MemoryStreamBuffers, StreamBuffers
from agentloft.chat.checkpoint import CheckpointWriter
from agentloft.chat.leases import Leases, MemoryLeases
from agentloft.chat.runs import RunRegistry, stop_signals
from agentloft.core import migrate, tracing
from agentloft.core.body_limit import BodyLimit, RouteLimit
from agentloft.core.crypto import SecretBox
from agentloft.core.db import Database
from agentloft.core.errors import install_error_handlers
from agentloft.core.jobs import JobRunner
from agentloft.core.memory import MemoryReleaser
from agentloft.core.metrics import Metrics
from agentloft.core.metrics import build as build_metrics
from agentloft.core.requests import RequestIds
from agentloft.core.runtime import Runtime
from agentloft.core.settings import Settings, load_settings
from agentloft.core.tracing import Tracing
from agentloft.documents import router as documents_router
from agentloft.files import jobs as files_jobs
from agentloft.files import router as files_router
from agentloft.files.errors import FileTooLarge
from agentloft.files.store import build_store
from agentloft.groups import router as groups_router
from agentloft.identity import router as identity_router
from agentloft.knowledge import embedding as knowledge_embedding
from agentloft.knowledge import jobs as knowledge_jobs
from agentloft.knowledge import router as knowledge_router
from agentloft.llm import lifecycle as llm_lifecycle
from agentloft.llm import router as llm_router
from agentloft.llm.clients import ModelClients
from agentloft.mcp_server import lifecycle as mcp_server_lifecycle
from agentloft.mcp_server import router as mcp_server_router
from agentloft.openai_api import router as openai_api_router
from agentloft.system import lifecycle as system_lifecycle
from agentloft.system import router as system_router
from agentloft.tools import lifecycle as tools_lifecycle
from agentloft.tools import router as tools_router
from agentloft.tools.mcp import lifecycle as mcp_lifecycle
from agentloft.tools.mcp import router as mcp_router
from agentloft.tools.registry import ToolRegistry
from agentloft.usage import router as usage_router
from agentloft.web import errors as web_errors
from agentloft.web import router as web_router
from agentloft.web.security_headers import SecurityHeaders
from agentloft.web.static_files import CompressPages

if TYPE_CHECKING:
    from agentloft.core.redis import SharedRedis

log = logging.getLogger(__name__)

# HTTP clients that log every request at INFO ("HTTP Request: POST …"): one line per model call, MCP
# message or A2A request, which buries everything else wherever INFO is shown.
REQUEST_LOGGERS = ("httpx", "httpx2")

# Every router, in the order FastAPI tries them on each request (a module's ``router``, then its
# ``admin_router``). The chat routes come first: a chat's start is the request whose every tenth of a
# millisecond shows (no two routers share a path).
ROUTERS: tuple[APIRouter, ...] = (
    chat_router.router,
    auth_router.router, auth_router.admin_router,
    system_router.router,
    llm_router.router, llm_router.admin_router,
    agents_router.router, agents_router.admin_router,
    tools_router.router, tools_router.admin_router,
    mcp_router.admin_router,
    documents_router.router,
    files_router.router,
    knowledge_router.router,
    identity_router.router, identity_router.admin_router,
    groups_router.admin_router,
    a2a_router.router,
    openai_api_router.router,
    mcp_server_router.router,
    usage_router.router, usage_router.admin_router,
    audit_router.admin_router,
    web_router.router,
)
Hook = Callable[[Runtime], Awaitable[None]]
# Each domain's start-up work, in this order.
STARTUP_HOOKS: tuple[Hook, ...] = (
    system_lifecycle.startup,  # first: refuses to start beside a process it must not run with
    tracing.startup,  # next: the spans of everything after it are exported
    llm_lifecycle.startup,
    tools_lifecycle.startup,
    mcp_lifecycle.startup,
    chat_lifecycle.startup,
    a2a_lifecycle.startup,
    mcp_server_lifecycle.startup,
    audit_lifecycle.startup,
    defaults.startup,
)
# What is let go at shutdown: the reverse of the start-up order.
SHUTDOWN_HOOKS: tuple[Hook, ...] = (
    mcp_server_lifecycle.shutdown,
    a2a_lifecycle.shutdown,
    chat_lifecycle.shutdown,
    mcp_lifecycle.shutdown,
    tracing.shutdown,  # the last spans flushed once the rest has let go
    system_lifecycle.shutdown,
)


def _shared_parts(settings: Settings) -> tuple[SharedRedis | None, StreamBuffers, Leases, CounterStore]:
    """The Redis client (if any), stream buffers, run leases and sign-in counters: in this process, or in
    the Redis several workers share.

    The Redis-backed modules are imported here, only when ``AGENTLOFT_REDIS_URL`` is set: the client
    library costs about 6 MB resident and 50 ms of start-up that one process on its own never uses."""
    if not settings.redis_url:
        return (None, MemoryStreamBuffers(settings.stream_grace_seconds),
                MemoryLeases(settings.worker_lease_seconds), MemoryCounters())
    from agentloft.auth.throttle_redis import RedisCounters
    from agentloft.chat.buffers_redis import RedisStreamBuffers
    from agentloft.chat.leases_redis import RedisLeases
    from agentloft.core.redis import connect

    redis = connect(settings.redis_url, settings.redis_prefix)
    return (redis, RedisStreamBuffers(redis, settings.stream_grace_seconds),
            RedisLeases(redis, settings.worker_lease_seconds), RedisCounters(redis))


def _install_error_handlers(app: FastAPI, settings: Settings) -> None:
    """The API's error handlers, and the pages'; with a Redis, its ``503 redis_unavailable`` too (imported
    only then, as in ``_shared_parts``)."""
    install_error_handlers(app)
    web_errors.install_page_errors(app)
    if settings.redis_url:
        from agentloft.core import redis

        redis.install_error_handler(app)


def build_runtime(settings: Settings, metrics: Metrics | None = None, traces: Tracing | None = None) -> Runtime:
    """The runtime with every shared service built, before any start-up hook runs."""
    metrics = metrics or Metrics()
    traces = traces or Tracing()
    redis, buffers, leases, counters = _shared_parts(settings)
    db = Database(settings.resolved_database_url)
    metrics.watch_pool(db.engine)
    if redis is not None:
        redis.on_error = metrics.redis_error
    rt = Runtime(
        settings=settings,
        db=db,
        box=SecretBox(settings.ensure_secret_key()),
        registry=ToolRegistry(),
        buffers=buffers,
        runs=RunRegistry(leases),
        checkpoints=CheckpointWriter(db),
        throttle=LoginThrottle.from_settings(settings, counters),
        models=ModelClients(timeout_seconds=settings.model_timeout_seconds,
                            instrument=traces.model_instrumentation()),
        file_store=build_store(settings),
        jobs=JobRunner(db, poll_seconds=settings.job_poll_seconds, lease_seconds=settings.job_lease_seconds,
                       max_attempts=settings.job_max_attempts, concurrency=settings.job_concurrency),
        redis=redis,
        metrics=metrics,
        tracing=traces,
    )
    rt.a2a = A2AServers(rt)
    register_jobs(rt)
    return rt


def register_jobs(rt: Runtime) -> None:
    """The handler of every kind of background job (``core.jobs``), named here rather than on import, so
    what runs in the background is listed in one place."""
    knowledge_jobs.register(rt.jobs)
    files_jobs.register(rt.jobs)
    knowledge_embedding.register(rt.jobs)


def quiet_request_logs() -> None:
    """Lower the HTTP clients' loggers to WARNING (their failures still show). A level an operator set
    on one of them before the app was built is kept."""
    for name in REQUEST_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.WARNING)


def _freeze_startup_objects() -> None:
    """Move what start-up made (modules, routes, schemas, the tool registry) out of the collector's
    reach: it lives as long as the process, and every full collection walked it again (~300 ms each
    under the chat benchmark's load, ~50 ms once frozen)."""
    gc.collect()
    gc.freeze()


# The largest request body read, in bytes: above the biggest any schema allows (a markdown preview of 1M
# characters, JSON-escaped), so only a client that means harm meets it. Without a limit, a body of any size
# was read into memory before anything was checked, even from a client that had not signed in: a 413 now.
MAX_BODY_BYTES = 16 * 1024 * 1024
# What an upload's body may hold beyond the file itself: the multipart form's boundaries and part headers
# (a few hundred bytes from any browser; room for a long file name).
UPLOAD_FRAMING_BYTES = 64 * 1024


def body_limits(settings: Settings) -> list[RouteLimit]:
    """The routes whose bodies have a limit of their own: uploads, ``AGENTLOFT_FILE_MAX_BYTES`` plus the
    form's framing, refused as ``413 file_too_large`` like a file the handler finds too large."""
    too_large = FileTooLarge(settings.file_max_bytes)
    return [RouteLimit("POST", "/api/files", settings.file_max_bytes + UPLOAD_FRAMING_BYTES, too_large.code,
                       too_large.message)]


NO_TELEMETRY: TelemetryConfig = {"tracing": False, "metrics": False, "logs": False, "operation_spans": False}


class AgentloftApp(FastAPI):
    """FastAPI with the request ids (``core.requests``) around everything, Starlette's server-error
    middleware included: a middleware added the usual way runs inside that one, and the 500 it answers
    would go out without the id the log line names."""

    metrics: Metrics = Metrics()
    tracing: Tracing = Tracing()

    def build_middleware_stack(self) -> ASGIApp:
        observe = self.metrics.request if self.metrics.enabled else None
        # the request's span inside the id's middleware, so the span carries the id
        return RequestIds(self.tracing.wrap(super().build_middleware_stack()), observe=observe)


def create_app(settings: Settings | None = None, *, run_migrations: bool = True) -> FastAPI:
    settings = settings or load_settings()
    settings.prepare_data_dir()
    quiet_request_logs()
    metrics = build_metrics(settings)
    traces = tracing.build(settings)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if run_migrations:
            migrate.upgrade(settings.resolved_database_url)
        rt = build_runtime(settings, metrics, traces)
        app.state.runtime = rt
        app.state.db = rt.db
        for hook in STARTUP_HOOKS:
            await hook(rt)
        await rt.jobs.start(rt)  # after start-up: handlers may use anything it set up
        _freeze_startup_objects()
        app.state.memory = MemoryReleaser()
        app.state.memory.start()
        try:
            with stop_signals(rt.runs, settings.shutdown_grace_seconds):  # the grace window of a stop
                yield
        finally:
            await app.state.memory.stop()
            await rt.jobs.stop()
            for hook in SHUTDOWN_HOOKS:
                await hook(rt)
            await rt.db.dispose()
            if rt.redis is not None:
                await rt.redis.aclose()
            rt.metrics.close()

    # FastAPI's own telemetry stays off: the request's span is ``core.tracing``'s (lighter, no per-step
    # spans, and its logs would carry exception messages and stack traces), the metrics ``core.metrics``'.
    app = AgentloftApp(title="agentloft", version=__version__, lifespan=lifespan, telemetry=NO_TELEMETRY)
    app.metrics = metrics
    app.tracing = traces
    app.add_middleware(CSRFMiddleware, secure=settings.env == "production")
    app.add_middleware(CompressPages)
    app.add_middleware(BodyLimit, max_bytes=MAX_BODY_BYTES, routes=body_limits(settings))  # before any reader
    app.add_middleware(SecurityHeaders, allow_remote_images=settings.allow_remote_images)
    _install_error_handlers(app, settings)
    for router in ROUTERS:
        app.include_router(router)
    web_router.mount_static(app)
    return app


def worker_app() -> FastAPI:
    """The app of one worker of ``agentloft serve --workers N`` (uvicorn's factory): settings from the
    environment, the schema already upgraded by the command before it started the workers."""
    return create_app(run_migrations=False)
