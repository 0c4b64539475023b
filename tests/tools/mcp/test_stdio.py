"""stdio MCP servers: the admin's command starts on demand, in bubblewrap as their own unprivileged user
(never as the server's own user), with only the configured environment, without the data directory; one
process per server in a worker, shared by every call, and stopped once it has been idle."""

from __future__ import annotations

import os
import pwd
import signal
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agentloft.core.settings import Settings
from tests.support import ApiClient, LiveApp, running_app
from tests.tools.mcp.conftest import SERVER_SCRIPT, stdio_command, tools_by_name
from tests.tools.mcp.test_calls import execute, wait_for

Add = Callable[..., dict[str, Any]]
IDLE_S = 5.0  # long enough that a loaded machine does not idle the process out between calls


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    yield from running_app(tmp_path, template_db, mcp_idle_seconds=IDLE_S)


def server_processes(marker: str) -> list[int]:
    """Pids of the test server's Python processes started with ``marker`` (the server's name)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if SERVER_SCRIPT.encode() in argv and marker.encode() in argv and b"python" in argv[0]:
            pids.append(int(entry))
    return pids


def launched(marker: str) -> list[int]:
    """Pids of every process started for the server with ``marker``: bubblewrap and what runs in it."""
    pids = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0"):
                pids.append(int(entry))
        except OSError:
            continue
    return pids


@pytest.fixture
def stdio_tools(admin: ApiClient, add_server: Add) -> dict[str, Any]:
    marker = f"stdio-{uuid.uuid4().hex[:8]}"
    command = stdio_command()
    command["args"] = [*command["args"], marker]
    server = add_server(transport="stdio", secret="s3cret", **command)
    assert server["env"] == {"GREETING": "•••"} and server["secretSet"]
    tools = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))
    return {"server": server, "marker": marker, **tools}


def test_runs_as_the_sandbox_user_with_its_own_environment(
    app: LiveApp, admin: ApiClient, stdio_tools: dict[str, Any]
) -> None:
    who = execute(admin, stdio_tools["whoami"], {})
    assert who["success"], who
    data = who["data"]
    assert data["uid"] == pwd.getpwnam(Settings().mcp_sandbox_user).pw_uid != os.getuid()
    assert data["greeting"] == "hello"
    assert set(data["env"]) <= {"PATH", "HOME", "LANG", "GREETING", "MCP_BEARER_TOKEN", "PWD"}, data["env"]
    assert data["cwd"] == "/tmp"
    assert stdio_tools["server"]["secretSet"] and "MCP_BEARER_TOKEN" in data["env"]
    unreadable = execute(admin, stdio_tools["read"], {"path": str(app.db_path)})
    assert unreadable["data"]["result"].startswith("cannot read"), unreadable
    assert execute(admin, stdio_tools["read"], {"path": "/etc/shadow"})["data"]["result"].startswith("cannot read")


def test_one_process_shared_then_stopped_when_idle(admin: ApiClient, stdio_tools: dict[str, Any]) -> None:
    marker = stdio_tools["marker"]
    instances = {execute(admin, stdio_tools["whoami"], {})["data"]["instance"] for _ in range(3)}
    assert len(instances) == 1, "every call went to the one process"
    assert server_processes(marker)
    wait_for(lambda: not server_processes(marker), "the idle server to stop", limit_s=IDLE_S + 10)
    # the next call starts it again
    again = execute(admin, stdio_tools["whoami"], {})["data"]["instance"]
    assert again not in instances and len(server_processes(marker)) == 1


def test_a_command_that_does_not_start_says_why(admin: ApiClient, add_server: Add) -> None:
    server = add_server("broken", transport="stdio", command="/usr/bin/python3", args=["-c", "import sys; "
                        "print('no such module: mcp_server_nothing', file=sys.stderr); sys.exit(3)"])
    r = admin.post(f"/api/admin/mcp-servers/{server['id']}/refresh")
    assert r.status_code == 502, r.text
    assert "no such module: mcp_server_nothing" in r.json()["error"]["message"]


def lingering(marker: str) -> bool:
    """Whether the server with ``marker`` has seen its input end and is taking its time to exit."""
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and Path(f"/proc/{entry}/cmdline").read_bytes().startswith(
                    f"lingering-{marker}".encode()):
                return True
        except OSError:
            continue
    return False


def test_a_call_while_an_idle_server_shuts_down_starts_a_new_one(
    admin: ApiClient, add_server: Add
) -> None:
    """The idle connection is closing (its process has not exited yet): a new call must not be handed
    that connection, but a fresh one."""
    marker = f"stdio-{uuid.uuid4().hex[:8]}"
    command = stdio_command()
    command["args"] = [*command["args"], marker]
    command["env"] = {**command["env"], "LINGER": "30"}
    server = add_server(transport="stdio", **command)
    whoami = tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))["whoami"]
    first = execute(admin, whoami, {})["data"]["instance"]
    wait_for(lambda: lingering(marker), "the idle server to start shutting down", limit_s=IDLE_S + 10)
    again = execute(admin, whoami, {})
    assert again["success"] is True, again
    assert again["data"]["instance"] != first


def test_a_call_after_the_server_died_starts_a_new_one(admin: ApiClient, stdio_tools: dict[str, Any]) -> None:
    """A server process that ended between calls (it crashed, it was killed) is not an error for the next
    call: that call was never sent, so it goes to a fresh process."""
    marker = stdio_tools["marker"]
    first = execute(admin, stdio_tools["whoami"], {})["data"]["instance"]
    for pid in server_processes(marker):
        os.kill(pid, signal.SIGKILL)
    # Gone means its whole tree (bubblewrap holds the pipes until it exits after its child).
    wait_for(lambda: not launched(marker), "the server to die", limit_s=10)
    again = execute(admin, stdio_tools["whoami"], {})
    assert again["success"] is True, again
    assert again["data"]["instance"] != first
