"""Fixtures for the tool-system tests: the add-on type registered into the live app, a quick way to
create tools, and a runtime on the live app's database for calling the service functions directly."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeVar

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.app import build_runtime
from agentloft.core.runtime import Runtime
from agentloft.core.settings import load_settings
from agentloft.tools import lifecycle
from tests.support import ApiClient, LiveApp
from tests.tools import addon

T = TypeVar("T")


def live_runtime(app: LiveApp) -> Runtime:
    """The runtime of the server under test (it runs in a thread of this process)."""
    return app.server.server.config.app.state.runtime


@pytest.fixture
def echo_type(app: LiveApp) -> str:
    """Register the add-on type into the running app through the registry, as an add-on would."""
    live_runtime(app).registry.register(addon.TOOL_TYPE)
    addon.CALLS.clear()
    return addon.TOOL_TYPE.slug


@pytest.fixture
def make_tool(admin: ApiClient, echo_type: str) -> Callable[..., dict[str, Any]]:
    """Create a tool through the API; of the add-on type unless ``type`` says otherwise."""

    def make(slug: str, type: str = echo_type, **fields: Any) -> dict[str, Any]:
        body = {"slug": slug, "name": fields.pop("name", slug.title()), "type": type, **fields}
        return admin.ok("POST", "/api/agent-tools", status=201, json=body)

    return make


@pytest.fixture
def call_service(app: LiveApp) -> Iterator[Callable[..., Any]]:
    """Run ``fn(db, rt)`` against the live app's database with a runtime built like the app builds its
    own (same secret key, registry from the real start-up hook, plus the add-on type)."""
    settings = load_settings(data_dir=app.data_dir, env="test", secret_key="test-secret-key")

    def call(fn: Callable[[AsyncSession, Runtime], Awaitable[T]], *, with_addon: bool = True) -> T:
        async def main() -> T:
            rt = build_runtime(settings)
            await lifecycle.startup(rt)
            if with_addon:
                rt.registry.register(addon.TOOL_TYPE)
            try:
                async with rt.db.session() as db:
                    return await fn(db, rt)
            finally:
                await rt.db.dispose()

        return asyncio.run(main())

    yield call
