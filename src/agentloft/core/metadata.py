"""Imports every domain's tables so that ``Base.metadata`` is complete (for Alembic and checks)."""

from __future__ import annotations

import importlib

DOMAINS_WITH_TABLES = ("system", "auth", "llm", "agents", "tools", "tools.mcp", "chat", "documents", "a2a",
                       "files", "knowledge", "groups", "usage", "identity", "audit")
# Tables that belong to no domain: the background jobs' queue, and what each user stores.
CORE_TABLE_MODULES = ("agentloft.core.jobs", "agentloft.core.storage_quota")


def import_all_models() -> None:
    for module in CORE_TABLE_MODULES:
        importlib.import_module(module)
    for domain in DOMAINS_WITH_TABLES:
        try:
            importlib.import_module(f"agentloft.{domain}.models")
        except ModuleNotFoundError as exc:
            if exc.name != f"agentloft.{domain}.models":
                raise
