"""Fixtures for the built-in tool type tests: a runtime on a migrated SQLite copy, a way to call a type
through the real wrapper (``runner.run_tool``), and a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import shutil
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from agentloft.app import build_runtime
from agentloft.core.runtime import Runtime
from agentloft.core.settings import load_settings
from agentloft.tools.base import ToolContext, ToolResult, ToolType
from agentloft.tools.runner import RunTool, run_tool
from tests.tools.types.local_server import web, web_server  # noqa: F401 (fixtures of this folder)

LOCAL = ("127.0.0.1",)  # the allow-list entry that lets a test reach its own server

Run = Callable[..., Awaitable[ToolResult]]


@pytest.fixture
async def rt(tmp_path: Path, template_db: Path) -> AsyncIterator[Runtime]:
    data = tmp_path / "data"
    data.mkdir()
    shutil.copy(template_db, data / "agentloft.db")
    runtime = build_runtime(load_settings(data_dir=data, env="test", secret_key="test-secret-key"))
    yield runtime
    await runtime.db.dispose()


def make_ctx(rt: Runtime, tool_type: ToolType, allow: Iterable[str] = ()) -> ToolContext:
    return ToolContext(runtime=rt, tool_id="at_test", tool_slug=tool_type.slug, user_id=1, user_role="admin",
                       extra={"allowed_internal_hosts": list(allow)})


@pytest.fixture
def run(rt: Runtime) -> Run:
    """``await run(TOOL_TYPE, args, config={...}, allow=LOCAL)``: the call a chat run would make."""

    async def call(tool_type: ToolType, args: dict[str, Any], config: dict[str, Any] | None = None, *,
                   allow: Iterable[str] = (), timeout_s: float = 30) -> ToolResult:
        cfg = tool_type.Config.model_validate(config or {})
        tool = RunTool(id="at_test", name=tool_type.slug, title=tool_type.name,
                       description=tool_type.describe(cfg), type=tool_type, config=cfg,
                       needs_approval=False, timeout_s=timeout_s)
        return await run_tool(tool, args, make_ctx(rt, tool_type, allow))

    return call


def processes_with(marker: str) -> list[int]:
    """Pids of the host's processes whose command line contains ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:  # it ended while we looked
            continue
        if marker.encode() in cmdline:
            found.append(int(entry.name))
    return found


def wait_until_running(marker: str, within_s: float = 10.0) -> list[int]:
    """Wait until a process carries ``marker`` (call it in a thread while the event loop runs the tool)."""
    deadline = time.monotonic() + within_s
    while not (found := processes_with(marker)):
        assert time.monotonic() < deadline, f"no process with {marker!r} started"
        time.sleep(0.02)
    return found


def wait_until_gone(marker: str, within_s: float = 5.0) -> None:
    """Wait until no process carries ``marker``; fail with their pids after ``within_s``. (It blocks: the
    processes are the kernel's to end, nothing on the event loop needs to run meanwhile.)"""
    deadline = time.monotonic() + within_s
    while (left := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not left, f"processes still running: {left}"
