"""Point 7 through real types and the real wrapper: a tool never crashes its caller."""

from __future__ import annotations

import asyncio
import logging
import secrets

import pytest
from pydantic import BaseModel

from agentloft.core.runtime import Runtime
from agentloft.tools.base import ToolContext, ToolResult, ToolType
from agentloft.tools.runner import RunTool, run_tool
from agentloft.tools.types.fetch import TOOL_TYPE as FETCH
from agentloft.tools.types.python_exec import TOOL_TYPE as PY
from tests.tools.types.conftest import LOCAL, Run, make_ctx, wait_until_gone, wait_until_running
from tests.tools.types.local_server import LocalWeb


class _Empty(BaseModel):
    pass


class Exploding(ToolType[_Empty, _Empty]):
    """A type whose code has a bug, as a built-in type might."""

    slug = "exploding"
    name = "Exploding"
    description = "Raises."
    Config = _Empty
    Input = _Empty

    def describe(self, config: _Empty) -> str:
        return "raises"

    async def execute(self, input: _Empty, config: _Empty, ctx: ToolContext) -> ToolResult:
        return {}["missing"]


async def test_an_exception_is_a_failed_result_and_a_log_line(rt: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    t = Exploding()
    tool = RunTool(id="at_x", name="exploding", title="Exploding", description="", type=t, config=_Empty(),
                   needs_approval=False)
    with caplog.at_level(logging.ERROR, logger="agentloft.tools.runner"):
        result = await run_tool(tool, {}, make_ctx(rt, t))
    assert not result.success and result.error == "tool 'exploding' failed: KeyError: 'missing'"
    assert "durationMs" in result.metadata
    assert any("exploding" in r.getMessage() and r.exc_info for r in caplog.records)


async def test_the_wrapper_time_limit_bounds_a_network_type(run: Run, web: LocalWeb) -> None:
    result = await run(FETCH, {"url": f"{web.url}/slow?s=1.5"}, allow=LOCAL, timeout_s=0.3)
    assert not result.success and result.error == "tool 'fetch' timed out after 0.3 s"


async def test_the_wrapper_time_limit_kills_the_python_child(run: Run) -> None:
    marker = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6)}"
    code = f"import subprocess, time\nsubprocess.Popen(['sleep', '{marker}'])\ntime.sleep(30)"
    call = asyncio.ensure_future(run(PY, {"code": code}, allow=LOCAL, timeout_s=1.5))
    await asyncio.to_thread(wait_until_running, marker)
    result = await call
    assert not result.success and result.error == "tool 'python' timed out after 1.5 s"
    wait_until_gone(marker)


async def test_validation_message_names_every_bad_field(run: Run) -> None:
    result = await run(FETCH, {"url": 5, "method": "PUT", "raw": "sometimes"})
    assert not result.success
    assert result.error.startswith("invalid input: ")
    for part in ("url: Input should be a valid string", "method: Input should be 'GET' or 'POST'",
                 "raw: Input should be a valid boolean"):
        assert part in result.error
