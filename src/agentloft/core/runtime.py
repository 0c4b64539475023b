"""The per-app runtime: settings, database, secret box and the shared services every domain uses.

Built once at start-up by ``agentloft.app.build_runtime``; every field is typed and set before the first
request. Routers reach it through the ``Rt`` dependency (``core.dependencies``); background work (chat
runs, A2A tasks) carries it explicitly, since it outlives the request. Nothing here is a module-level
global, so several apps (tests) can live in one process.

The field types come from the domains that own them; they are imported for the type checker only, so
``core`` stays below every domain at run time; the Redis client's type too, so a process without
``AGENTLOFT_REDIS_URL`` never imports the client library (``core.redis``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from agentloft.core.crypto import SecretBox
from agentloft.core.db import Database
from agentloft.core.jobs import JobRunner
from agentloft.core.metrics import Metrics
from agentloft.core.settings import Settings
from agentloft.core.tracing import Tracing

if TYPE_CHECKING:
    from agentloft.a2a.server import A2AServers
    from agentloft.auth.throttle import LoginThrottle
    from agentloft.chat.buffers import StreamBuffers
    from agentloft.chat.checkpoint import CheckpointWriter
    from agentloft.chat.runs import RunRegistry
    from agentloft.core.redis import SharedRedis
    from agentloft.files.store import FileStore
    from agentloft.knowledge.cache import KnowledgeCache
    from agentloft.llm.clients import ModelClients
    from agentloft.mcp_server.server import McpServer
    from agentloft.tools.mcp.connections import McpConnections
    from agentloft.tools.registry import ToolRegistry


@dataclass(eq=False)
class Runtime:
    settings: Settings
    db: Database
    box: SecretBox
    registry: ToolRegistry
    """Tool types by slug. Add-ons register theirs with ``rt.registry.register(tool_type)`` at start-up,
    through the same call the built-in types use."""
    buffers: StreamBuffers
    """Replayable chunk streams of running turns (``chat.buffers``)."""
    runs: RunRegistry
    """The turns this process runs and which worker owns each run, for stop, shutdown and the runs of
    workers that died (``chat.runs``)."""
    checkpoints: CheckpointWriter
    """Saves the text of streaming replies once a second, so a worker that dies loses little (``chat.checkpoint``)."""
    throttle: LoginThrottle
    models: ModelClients
    """Model clients and built pydantic-ai models, shared by every turn (``llm.clients``)."""
    file_store: FileStore
    """Where uploaded files' bytes and the text read from them live (``files.store``): the data dir, or an
    S3 bucket shared by every machine."""
    jobs: JobRunner
    """The background jobs this process claims and runs (``core.jobs``); handlers are registered by kind
    in ``app.register_jobs``."""
    redis: SharedRedis | None = None
    """The Redis several workers share (``AGENTLOFT_REDIS_URL``); None for one process on its own."""
    metrics: Metrics = field(default_factory=Metrics)
    """What the app reports to Prometheus (``core.metrics``); the no-op base when metrics are off."""
    tracing: Tracing = field(default_factory=Tracing)
    """OpenTelemetry traces (``core.tracing``); the no-op base when no OTLP endpoint is set."""
    knowledge_cache: KnowledgeCache | None = None
    """Knowledge postings and vectors kept in memory for search (``knowledge.cache``); made on the first
    knowledge search, so a process that never does one never loads numpy."""
    a2a: A2AServers = field(init=False)
    """The A2A server side, one request handler per agent; it needs the runtime, so it is set right after."""
    mcp: McpConnections = field(init=False)
    """This process's MCP clients, one per server; set by ``tools.mcp.lifecycle`` at start-up."""
    mcp_server: McpServer = field(init=False)
    """The MCP server at ``/mcp`` (agents as tools) and its session manager; set by ``mcp_server.lifecycle``."""
