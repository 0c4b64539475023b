"""All web pages under one ``router`` (one sub-router per module of ``pages/``) and ``mount_static``.

To add pages, create ``pages/<name>.py`` exposing ``router`` and add its name to ``PAGE_MODULES``. A
listed module that does not exist yet (a domain still being built) is skipped, not an import error.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from fastapi import APIRouter, FastAPI

from agentloft.web import render_pool
from agentloft.web.static_files import VersionedStaticFiles
from agentloft.web.templating import STATIC_DIR

PAGE_MODULES: tuple[str, ...] = (
    "home",
    "auth",
    "tokens",
    "usage",
    "admin",
    "admin_tools",
    "admin_mcp",
    "admin_audit",
    "chat",
    "approvals",
    "setup",
    "documents",
    "knowledge",
    "render",
    "language",
)


def _page_module(name: str) -> ModuleType | None:
    full = f"agentloft.web.pages.{name}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as exc:
        if exc.name != full:
            raise
        return None


def build_router() -> APIRouter:
    """The pages' routes, with the render pool (``web.render_pool``) as their lifespan."""
    aggregate = APIRouter(lifespan=render_pool.serving)
    for name in PAGE_MODULES:
        module = _page_module(name)
        if module is not None:
            aggregate.include_router(module.router)
    return aggregate


router = build_router()


def mount_static(app: FastAPI) -> None:
    """Serve ``web/static`` (CSS, ES modules) at /static, versioned (``web.static_files``); it ships
    inside the package."""
    app.mount("/static", VersionedStaticFiles(directory=STATIC_DIR), name="static")
