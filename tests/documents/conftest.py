"""Fixtures for the documents tests: API helpers, and a way to call the ``document`` tool through the
real wrapper (``tools.runner.run_tool``) against the live app's database, as the chat engine does."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentloft.app import build_runtime
from agentloft.core.runtime import Runtime
from agentloft.core.settings import load_settings
from agentloft.tools.base import ToolContext, ToolResult
from agentloft.tools.runner import RunTool, needs_approval, run_tool
from agentloft.tools.types.document import TOOL_TYPE
from tests.support import ApiClient, LiveApp


def user_id(client: ApiClient) -> int:
    return client.ok("GET", "/api/auth/me")["id"]


def create_doc(client: ApiClient, **body: Any) -> dict[str, Any]:
    body.setdefault("title", "A title")
    body.setdefault("content", "Some content")
    return client.ok("POST", "/api/agent-documents", json=body, status=201)


@dataclass
class ToolCaller:
    """Runs the document tool as a chat run would: validated input, real service, real database."""

    runtime: Runtime
    loop: asyncio.AbstractEventLoop
    config: dict[str, Any] = field(default_factory=dict)

    def tool(self, **config: Any) -> RunTool:
        cfg = TOOL_TYPE.Config.model_validate({**self.config, **config})
        return RunTool(
            id="at_test", name="document", title="Documents", description=TOOL_TYPE.describe(cfg),
            type=TOOL_TYPE, config=cfg, needs_approval=False,
        )

    def ctx(self, uid: int | None, *, session_id: str | None = None, approved: bool = False) -> ToolContext:
        return ToolContext(
            runtime=self.runtime, tool_id="at_test", tool_slug="document", user_id=uid,
            user_role="user", session_id=session_id, approved=approved,
        )

    def __call__(
        self,
        uid: int | None,
        args: dict[str, Any],
        *,
        session_id: str | None = None,
        approved: bool = False,
        config: dict[str, Any] | None = None,
    ) -> ToolResult:
        tool = self.tool(**(config or {}))
        ctx = self.ctx(uid, session_id=session_id, approved=approved)
        return self.loop.run_until_complete(run_tool(tool, args, ctx))

    def needs_approval(self, uid: int, args: dict[str, Any], config: dict[str, Any] | None = None) -> bool:
        return needs_approval(self.tool(**(config or {})), args, self.ctx(uid))

    def ok(self, uid: int | None, args: dict[str, Any], **kw: Any) -> Any:
        result = self(uid, args, **kw)
        assert result.success, result.error
        return result.data

    def fail(self, uid: int | None, args: dict[str, Any], **kw: Any) -> ToolResult:
        result = self(uid, args, **kw)
        assert not result.success, result.data
        assert "durationMs" in result.metadata
        return result


@pytest.fixture
def call_tool(app: LiveApp) -> Iterator[ToolCaller]:
    settings = load_settings(data_dir=app.data_dir, env="test", secret_key="test-secret-key")
    runtime = build_runtime(settings)
    loop = asyncio.new_event_loop()
    try:
        yield ToolCaller(runtime=runtime, loop=loop)
    finally:
        loop.run_until_complete(runtime.db.dispose())
        loop.close()


@pytest.fixture
def alice_id(user: ApiClient) -> int:
    return user_id(user)


@pytest.fixture
def bob(make_user: Callable[..., ApiClient]) -> ApiClient:
    return make_user("bob")
