"""The stdio launcher's command line: what the sandbox can see, who it runs as, and the refusals that say
why a stdio server cannot start."""

from __future__ import annotations

import asyncio
import json
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloft.core.netguard import AllowList
from agentloft.core.settings import Settings
from agentloft.tools.mcp.egress import Egress
from agentloft.tools.mcp.launch import BwrapLauncher, DirectLauncher, SandboxUnavailable, StdioSpec, mcp_limits
from agentloft.tools.types.python_exec import Config as PythonConfig
from agentloft.tools.types.python_exec import run_snippet

USER = Settings().mcp_sandbox_user  # the stdio servers' own user, made by scripts/setup-sandbox
LIMITS = mcp_limits(Settings())


def sandboxed(*private: Path, user: str = USER, **settings: int) -> BwrapLauncher:
    """The launcher as the app makes it, hiding ``private``, with the limits of ``settings``."""
    return BwrapLauncher(private=tuple(map(str, private)), user=user, limits=mcp_limits(Settings(**settings)),
                         egress=Egress(refuse_all))


async def refuse_all() -> AllowList:
    return AllowList()


NO_EGRESS = Egress(refuse_all)  # never started: these servers get no network


def bound(argv: list[str]) -> list[str]:
    return [argv[i + 1] for i, word in enumerate(argv) if word in ("--ro-bind-try", "--ro-bind", "--bind")]


def test_named_paths_are_bound_but_never_the_data_dir(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    secret = data / "agentloft.db"
    secret.write_text("x")
    script = tmp_path / "server.py"
    script.write_text("")
    spec = StdioSpec(command="/usr/bin/python3", args=(str(script), str(secret)))
    params = sandboxed(data)(spec)
    paths = bound([params.command, *params.args])
    assert str(script) in paths and "/usr" in paths
    assert not [p for p in paths if p.startswith(str(data))]


# A stand-in for a filesystem server: for each path it is given, what it can see and read there.
PROBE = """import json, os, sys
seen = {}
for path in sys.argv[1:]:
    try:
        with open(path, "rb") as f:
            seen[path] = "read " + f.read().decode()
    except IsADirectoryError:
        seen[path] = "lists " + ",".join(sorted(os.listdir(path)))
    except OSError as exc:
        seen[path] = type(exc).__name__
print(json.dumps(seen))
"""


def open_tree(parent: str) -> Path:
    """A directory under ``parent`` that everybody may read, as a careless install's data dir would be:
    only the sandbox stands between the server and what is in it."""
    root = Path(tempfile.mkdtemp(prefix="agentloft-launch-", dir=parent))
    root.chmod(0o755)
    return root


def private_data(root: Path, **settings: str) -> Settings:
    """A data dir under ``root`` with a database and a key file in it, all world-readable."""
    data = root / "data"
    data.mkdir(mode=0o755)
    loaded = Settings(data_dir=data, **settings)
    for path in (data / "agentloft.db", data / "secret_key", *loaded.database_files()[:1]):
        path.write_text(f"secret of {path.name}")
        path.chmod(0o644)
    return loaded


def probe(launcher: BwrapLauncher, root: Path, *paths: str) -> dict[str, str]:
    script = root / "probe.py"
    script.write_text(PROBE)
    script.chmod(0o644)
    params = launcher(StdioSpec(command="/usr/bin/python3", args=(str(script), *paths)))
    done = subprocess.run([params.command, *params.args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.fixture
def tmp_tree() -> Iterator[Path]:
    root = open_tree("/tmp")
    yield root
    shutil.rmtree(root)


@pytest.fixture
def opt_tree() -> Iterator[Path]:
    root = open_tree("/opt")
    yield root
    shutil.rmtree(root)


def test_a_server_given_the_root_directory_cannot_read_the_data(tmp_tree: Path) -> None:
    """A filesystem server is often started with ``/`` as its argument; binding it showed the whole disk,
    the data dir with it, and also a database that lives outside the data dir."""
    settings = private_data(tmp_tree, database_url=f"sqlite+aiosqlite:///{tmp_tree}/elsewhere.db")
    data = settings.data_dir
    paths = ("/", str(data), str(data / "agentloft.db"), str(data / "secret_key"), f"{tmp_tree}/elsewhere.db")
    shown = probe(sandboxed(), tmp_tree, *paths)  # the control: nothing hidden
    assert shown[str(data / "agentloft.db")] == "read secret of agentloft.db", shown
    launcher = sandboxed(*settings.private_paths())
    seen = probe(launcher, tmp_tree, *paths)
    assert seen["/"].startswith("lists ") and "usr" in seen["/"]  # the argument is honoured
    assert seen[str(data)] == "PermissionError"
    assert seen[str(data / "agentloft.db")] == seen[str(data / "secret_key")] == "PermissionError"
    assert seen[f"{tmp_tree}/elsewhere.db"] == "PermissionError"  # /dev/null in its place, mounted nodev


def test_a_data_dir_under_opt_stays_hidden(opt_tree: Path) -> None:
    """``/opt`` is bound whole; a data dir inside it was readable by every stdio server."""
    settings = private_data(opt_tree)
    data = settings.data_dir
    launcher = sandboxed(*settings.private_paths())
    seen = probe(launcher, opt_tree, str(opt_tree), str(data), str(data / "agentloft.db"))
    assert seen == {str(opt_tree): "lists data,probe.py", str(data): "PermissionError",
                    str(data / "agentloft.db"): "PermissionError"}
    exposed = probe(sandboxed(), opt_tree, str(data / "agentloft.db"))
    assert exposed == {str(data / "agentloft.db"): "read secret of agentloft.db"}


LIMITS_PROBE = """import json, os
wanted = ("Max cpu time", "Max address space", "Max processes", "Max open files", "Max file size")
limits = {line[:26].strip(): line[26:47].split()[0] for line in open("/proc/self/limits") if line.startswith(wanted)}
written = 0
try:
    with open("/tmp/fill", "wb", buffering=0) as f:
        while written < 8 << 20:
            written += f.write(b"x" * (1 << 20))
except OSError as exc:
    limits["wrote"] = f"{written >> 20} MB, then {exc.strerror}"
print(json.dumps({**limits, "uid": os.getuid()}))
"""


def test_a_server_runs_with_limits_as_a_user_of_its_own(tmp_tree: Path) -> None:
    script = tmp_tree / "limits.py"
    script.write_text(LIMITS_PROBE)
    script.chmod(0o644)
    params = sandboxed(mcp_memory_mb=512, mcp_max_processes=64, mcp_max_open_files=100, mcp_scratch_mb=4)(
        StdioSpec(command="/usr/bin/python3", args=(str(script),)))
    done = subprocess.run([params.command, *params.args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "Max cpu time": "unlimited", "Max address space": str(512 << 20), "Max processes": "64",
        "Max open files": "100", "Max file size": str(4 << 20), "wrote": "4 MB, then File too large",
        "uid": pwd.getpwnam("agentloft-mcp").pw_uid,
    }
    assert Settings().python_sandbox_user != USER


# Holds this many processes of its user until its input ends.
HOLDER = """import os, sys
for _ in range(int(sys.argv[1])):
    if os.fork() == 0:
        sys.stdin.read(); os._exit(0)
print("holding", flush=True)
sys.stdin.read()
"""


async def test_a_busy_server_leaves_the_python_tools_processes_alone(tmp_tree: Path) -> None:
    """The process limit counts per user: stdio servers that ran as the python tool's user used up the
    budget of its snippets, which then could not start."""
    script = tmp_tree / "holder.py"
    script.write_text(HOLDER)
    script.chmod(0o644)
    snippet = PythonConfig.model_validate({"maxProcesses": 12})
    for user, snippets_start in ((Settings().python_sandbox_user, False), (USER, True)):
        params = sandboxed(user=user)(StdioSpec(command="/usr/bin/python3", args=(str(script), "16")))
        holder = await asyncio.create_subprocess_exec(params.command, *params.args, stdin=subprocess.PIPE,
                                                      stdout=subprocess.PIPE)
        try:
            assert holder.stdout is not None and await holder.stdout.readline() == b"holding\n"
            try:
                data, _ = await run_snippet("print('ran')", "", snippet, Settings().python_sandbox_user)
                outcome = data["stdout"] or data["stderr"]
            except SandboxUnavailable as exc:  # the sandbox itself could not start
                outcome = str(exc)
            assert (outcome == "ran\n") is snippets_start, (user, outcome)
        finally:
            await holder.communicate(b"")


def test_a_script_under_tmp_runs(tmp_path: Path) -> None:
    """The sandbox's own /tmp is an empty tmpfs; a server (or the Python running it) that lives under the
    host's /tmp, as a checkout there does, must still be visible inside. tmp_path is under /tmp."""
    assert str(tmp_path).startswith("/tmp/")
    script = tmp_path / "server.py"
    script.write_text("print('inside')")
    script.chmod(0o644)
    data = tmp_path / "data"
    data.mkdir()
    params = sandboxed(data)(StdioSpec(command="/usr/bin/python3", args=(str(script),)))
    done = subprocess.run([params.command, *params.args], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "inside", done.stderr


def test_drops_to_the_sandbox_user_and_clears_the_environment(tmp_path: Path) -> None:
    spec = StdioSpec(command="/usr/bin/env", env=(("TOKEN", "t"),), secret="s", network=False)
    params = sandboxed(tmp_path)(spec)
    argv = [params.command, *params.args]
    assert "--clearenv" in argv and "--unshare-net" in argv and "--die-with-parent" in argv
    tail = argv[argv.index("--", argv.index("--clearenv")) + 1:]
    uid = pwd.getpwnam(USER).pw_uid
    assert tail[0].endswith("setpriv") and f"--reuid={uid}" in tail and "--no-new-privs" in tail
    assert tail[-1] == "/usr/bin/env"
    setenv = {argv[i + 1]: argv[i + 2] for i, word in enumerate(argv) if word == "--setenv"}
    assert setenv == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TOKEN": "t",
                      "MCP_BEARER_TOKEN": "s"}


@pytest.mark.parametrize(
    ("launcher", "message"),
    [
        (BwrapLauncher(private=("/nonexistent",), user=USER, limits=LIMITS, egress=NO_EGRESS, bwrap=None),
         "'bwrap' or 'setpriv' is not installed"),
        (BwrapLauncher(private=("/nonexistent",), user="no-such-user-here", limits=LIMITS, egress=NO_EGRESS),
         "the sandbox user 'no-such-user-here' does not exist"),
        (BwrapLauncher(private=("/nonexistent",), user="root", limits=LIMITS, egress=NO_EGRESS), "must not be root"),
    ],
)
def test_refusals_say_why(launcher: BwrapLauncher, message: str) -> None:
    with pytest.raises(SandboxUnavailable, match=message):
        launcher(StdioSpec(command="/bin/true"))


def test_without_the_sandbox_the_command_runs_as_given() -> None:
    params = DirectLauncher()(StdioSpec(command="srv", args=("a",), env=(("K", "v"),)))
    assert (params.command, params.args, params.env) == ("srv", ["a"], {"K": "v"})
