"""agentloft: a self-hosted, multi-user AI agent platform."""

__version__ = "0.1.0"
