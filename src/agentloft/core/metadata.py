"""Imports every domain's tables so that ``Base.metadata`` is complete (for Alembic and checks)."""

from __future__ import annotations

import importlib

DOMAINS_WITH_TABLES = ("system", "auth", "llm", "agents", "tools", "tools.mcp", "chat", "documents", "a2a")


def import_all_models() -> None:
    for domain in DOMAINS_WITH_TABLES:
        try:
            importlib.import_module(f"agentloft.{domain}.models")
        except ModuleNotFoundError as exc:
            if exc.name != f"agentloft.{domain}.models":
                raise
