"""The stdio launcher's command line: what the sandbox can see, who it runs as, and the refusals that say
why a stdio server cannot start."""

from __future__ import annotations

import pwd
import subprocess
from pathlib import Path

import pytest

from agentloft.core.settings import Settings
from agentloft.tools.mcp.launch import BwrapLauncher, DirectLauncher, SandboxUnavailable, StdioSpec

USER = Settings().python_sandbox_user  # the one sandbox user, made by scripts/setup-sandbox


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
    params = BwrapLauncher(data_dir=data, user=USER)(spec)
    paths = bound([params.command, *params.args])
    assert str(script) in paths and "/usr" in paths
    assert not [p for p in paths if p.startswith(str(data))]


def test_a_script_under_tmp_runs(tmp_path: Path) -> None:
    """The sandbox's own /tmp is an empty tmpfs; a server (or the Python running it) that lives under the
    host's /tmp, as a checkout there does, must still be visible inside. tmp_path is under /tmp."""
    assert str(tmp_path).startswith("/tmp/")
    script = tmp_path / "server.py"
    script.write_text("print('inside')")
    script.chmod(0o644)
    data = tmp_path / "data"
    data.mkdir()
    params = BwrapLauncher(data_dir=data, user=USER)(StdioSpec(command="/usr/bin/python3", args=(str(script),)))
    done = subprocess.run([params.command, *params.args], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "inside", done.stderr


def test_drops_to_the_sandbox_user_and_clears_the_environment(tmp_path: Path) -> None:
    spec = StdioSpec(command="/usr/bin/env", env=(("TOKEN", "t"),), secret="s", network=False)
    params = BwrapLauncher(data_dir=tmp_path, user=USER)(spec)
    argv = [params.command, *params.args]
    assert "--clearenv" in argv and "--unshare-net" in argv and "--die-with-parent" in argv
    tail = argv[argv.index("--", argv.index("--clearenv")) + 1:]
    uid = pwd.getpwnam(USER).pw_uid
    assert tail[0].endswith("setpriv") and f"--reuid={uid}" in tail and "--no-new-privs" in tail
    assert tail[-1] == "/usr/bin/env"
    setenv = {argv[i + 1]: argv[i + 2] for i, word in enumerate(argv) if word == "--setenv"}
    assert setenv == {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "TOKEN": "t",
                      "MCP_BEARER_TOKEN": "s"}
    with_net = BwrapLauncher(data_dir=tmp_path, user=USER)(StdioSpec(command="/usr/bin/env", network=True))
    assert "--unshare-net" not in with_net.args


@pytest.mark.parametrize(
    ("launcher", "message"),
    [
        (BwrapLauncher(data_dir=Path("/nonexistent"), user=USER, bwrap=None),
         "'bwrap' or 'setpriv' is not installed"),
        (BwrapLauncher(data_dir=Path("/nonexistent"), user="no-such-user-here"),
         "the sandbox user 'no-such-user-here' does not exist"),
        (BwrapLauncher(data_dir=Path("/nonexistent"), user="root"), "must not be root"),
    ],
)
def test_refusals_say_why(launcher: BwrapLauncher, message: str) -> None:
    with pytest.raises(SandboxUnavailable, match=message):
        launcher(StdioSpec(command="/bin/true"))


def test_without_the_sandbox_the_command_runs_as_given() -> None:
    params = DirectLauncher()(StdioSpec(command="srv", args=("a",), env=(("K", "v"),)))
    assert (params.command, params.args, params.env) == ("srv", ["a"], {"K": "v"})
