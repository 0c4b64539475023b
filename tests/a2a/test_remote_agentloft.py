"""Two agentloft servers: a second ``agentloft serve`` process is a remote agent of the first. The first
registers the second's agent card with a personal API token of the second; agent-invoke then calls it
over A2A (the second streams its model's reply back), and the first's panel streams it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.a2a.conftest import CALLEE_PROMPT, CALLER_PROMPT, callee_step, caller_step
from tests.a2a.test_invoke import deltas, panel, tool_output
from tests.chat.helpers import chat
from tests.fakes.openai_server import FakeModel, FakeModelServer, Step, call, free_port, text
from tests.support import ApiClient, LiveApp, signup


class SecondServer:
    """``agentloft serve`` in its own process, on SQLite in its own data dir, on the fake model."""

    def __init__(self, data_dir: Path, model_url: str) -> None:
        self.port = free_port()
        env = {**os.environ, "AGENTLOFT_DATA_DIR": str(data_dir), "AGENTLOFT_SECRET_KEY": "second-secret",
               "AGENTLOFT_ENV": "test", "AGENTLOFT_CREATE_DEFAULTS": "false", "AGENTLOFT_OPENAI_BASE_URL": model_url,
               "AGENTLOFT_DEFAULT_MODEL": "fake-model"}
        env.pop("AGENTLOFT_DATABASE_URL", None)
        self.process = subprocess.Popen(
            [sys.executable, "-m", "agentloft.cli", "serve", "--port", str(self.port), "--log-level", "warning"],
            env=env,
        )
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.url}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert self.process.poll() is None and time.monotonic() < deadline, "the second server did not start"
            time.sleep(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(20)


@pytest.fixture
def second(tmp_path: Path, fake_model_server: FakeModelServer) -> Iterator[SecondServer]:
    server = SecondServer(tmp_path / "second", fake_model_server.base_url)
    yield server
    server.stop()


def test_an_agentloft_agent_as_remote_agent(
    app: LiveApp, admin: ApiClient, user: ApiClient, second: SecondServer,
    make_agent: Callable[..., dict[str, Any]], invoke_tool: Callable[..., dict[str, Any]], fake_model: FakeModel,
) -> None:
    with ApiClient(second.url) as other:
        other.get("/api/health")
        signup(other, "root")
        other.ok("POST", "/api/admin/agents", json={"slug": "coder", "name": "Coder", "systemPrompt": CALLEE_PROMPT,
                                                   "description": "Writes code.", "a2aCallable": True})
        token = other.ok("POST", "/api/auth/tokens", json={"name": "first server"})["token"]

    admin.ok("PUT", "/api/admin/settings", json={"allowedInternalHosts": ["127.0.0.1"]})
    caller = make_agent("general", CALLER_PROMPT, name="General")
    invoke_tool(caller, timeoutMs=30_000)
    remote = admin.ok("POST", "/api/admin/agents", json={
        "slug": "far-coder", "name": "Far coder", "kind": "remote", "a2aCallable": True,
        "cardUrl": f"{second.url}/a2a/coder/.well-known/agent-card.json", "remoteToken": token})
    assert remote["cardError"] is None and remote["card"]["name"] == "Coder"
    bindings = {i["protocolBinding"] for i in remote["card"]["supportedInterfaces"]}
    assert "JSONRPC" in bindings

    fake_model.push(caller_step(call("ask-agent", {"agentSlug": "far-coder", "input": "write add()"})),
                    callee_step(Step(text="def add(a, b): return a + b", chunks=5, delay=0.1)),
                    caller_step(text("Done.")))
    reply = chat(user, "general", "get me add()")
    output = tool_output(reply)
    assert output["type"] == "tool-output-available", output
    assert output["output"]["data"] == "def add(a, b): return a + b"
    task_id = output["output"]["metadata"]["taskId"]
    chunks = panel(user, task_id)
    assert deltas(chunks) == "def add(a, b): return a + b"
    assert len([c for c in chunks if isinstance(c, dict) and c["type"] == "text-delta"]) > 1, "it streamed"
    assert reply.text == "Done."
