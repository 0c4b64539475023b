"""Python: run a snippet in the operating system's sandbox and return its output.

Each snippet runs in a fresh interpreter (``python -I``: no environment, no user site) inside
``tools.sandbox``: bubblewrap namespaces as a dedicated unprivileged host user, with limits on CPU,
memory, processes, file size, open files and scratch space, plus a wall-clock limit that kills the whole
process tree. The snippet sees the standard library, a private ``/tmp`` and working directory, and
nothing of the server: no data directory (hidden even when it lies under ``/usr`` or the interpreter's
prefix), no server processes, no environment, no network.

When the host cannot provide the sandbox the tool refuses to run and says why, unless an admin ticked
``unsafeWithoutSandbox``; then the snippet runs as the server's own user with the limits only, and the
result's metadata says ``sandboxed: false``.

There is no in-process guard (an audit hook): code running in the interpreter can undo anything the
interpreter set up before it, so it would only suggest a boundary that is not there.

The snippet's source reaches the interpreter through an inherited memfd rather than a file, so the
working directory starts empty and nothing of the run is written to the host's disk.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools import sandbox
from agentloft.tools.base import ToolContext, ToolResult, ToolType

# Runs as ``python -c``: reads the snippet from the inherited descriptor, then runs it as ``__main__``
# under the name "snippet.py" (what tracebacks show).
BOOTSTRAP = """import os, sys
with os.fdopen(int(sys.argv[1]), encoding="utf-8") as _f:
    _source = _f.read()
sys.argv = ["snippet.py"]
del _f, os, sys
exec(compile(globals().pop("_source"), "snippet.py", "exec"))
"""


class Config(ApiModel):
    timeout_seconds: float = Field(default=10, gt=0, le=300, description="Wall-clock limit for a run.")
    memory_mb: int = Field(
        default=256, ge=32, le=8_192,
        description="Address-space limit per process, in MB. A run holds at most max processes × this, plus its "
        "scratch space three times (working directory, /tmp, /dev/shm): the budget this host can enforce "
        "without a cgroup per run.",
    )
    max_output_chars: int = Field(
        default=10_000, ge=100, le=1_000_000, description="Longest stdout/stderr kept (each)."
    )
    max_file_mb: int = Field(default=16, ge=1, le=1_024, description="Largest file the snippet may write, in MB.")
    scratch_mb: int = Field(
        default=64, ge=1, le=4_096,
        description="Space in the snippet's working directory, its /tmp and its /dev/shm (each), in MB; the rest "
        "of its file system is read-only.",
    )
    max_processes: int = Field(
        default=32, ge=4, le=1_024,
        description="Processes and threads the sandbox user may have at once (shared by runs at the same time; "
        "the sandbox itself takes three).",
    )
    max_open_files: int = Field(default=64, ge=16, le=4_096, description="Open files per process.")
    unsafe_without_sandbox: bool = Field(
        default=False,
        description="UNSAFE. When this host cannot provide the sandbox, run snippets anyway, as the server's own "
        "user with only resource limits: a snippet can then read the server's database and secret key, reach the "
        "network and signal the server. Only for hosts where everyone who can run this tool is trusted with the "
        "server itself.",
    )


class Input(ApiModel):
    code: str = Field(
        min_length=1,
        max_length=100_000,
        description="Python 3 code to run as a script. Print what you want to see; the output is returned. "
        "No network access; the standard library is available; files go to a private scratch directory.",
    )
    stdin: str = Field(default="", max_length=1_000_000, description="Text passed to the script's standard input.")


def limits(config: Config) -> sandbox.Limits:
    mb = 1024 * 1024
    return sandbox.Limits(
        cpu_seconds=int(config.timeout_seconds) + 1, memory_bytes=config.memory_mb * mb,
        processes=config.max_processes, file_bytes=config.max_file_mb * mb, open_files=config.max_open_files,
        scratch_bytes=config.scratch_mb * mb,
    )


async def run_snippet(code: str, stdin: str, config: Config, sandbox_user: str,
                      private: Sequence[str] = ()) -> tuple[dict[str, object], bool]:
    """Run ``code``; return (stdout, stderr, exit code, whether it was cut or timed out) and whether it ran
    in the sandbox. ``private`` paths (the server's data) stay hidden in the sandbox. Raises
    ``SandboxUnavailable`` when there is no sandbox and no opt-out."""
    exe, prefixes = sandbox.interpreter()
    user: sandbox.SandboxUser | None = None
    try:
        user = await sandbox.ensure_sandbox(sandbox_user, [exe, "-I", "-c", "pass"], prefixes)
    except sandbox.SandboxUnavailable:
        if not config.unsafe_without_sandbox:
            raise
    source = os.memfd_create("snippet", 0)
    try:
        os.write(source, code.encode("utf-8"))
        os.lseek(source, 0, os.SEEK_SET)
        command = [exe, "-I", "-B", "-X", "utf8", "-c", BOOTSTRAP, str(source)]
        bounds, cap, feed = limits(config), config.max_output_chars * 4, stdin.encode("utf-8")
        if user is not None:
            done = await sandbox.run_confined(command, user=user, limits=bounds, wall_seconds=config.timeout_seconds,
                                              output_cap=cap, stdin=feed, pass_fds=(source,), read_only=prefixes,
                                              private=private)
        else:
            done = await sandbox.run_unconfined(command, limits=bounds, wall_seconds=config.timeout_seconds,
                                                output_cap=cap, stdin=feed, pass_fds=(source,))
    finally:
        os.close(source)
    return _outcome(done, config.max_output_chars), user is not None


def _outcome(done: sandbox.Completed, limit: int) -> dict[str, object]:
    stdout = done.stdout.decode("utf-8", errors="replace")
    stderr = done.stderr.decode("utf-8", errors="replace")
    return {
        "exitCode": done.exit_code,
        "stdout": stdout[:limit],
        "stderr": stderr[-limit:] if len(stderr) > limit else stderr,
        "truncated": done.stdout_cut or done.stderr_cut or len(stdout) > limit or len(stderr) > limit,
        "timedOut": done.timed_out,
    }


class PythonTool(ToolType[Config, Input]):
    slug = "python"
    name = "Python"
    description = "Runs a Python snippet in an operating-system sandbox with time and memory limits and no network."
    Config = Config
    Input = Input
    # Running code is powerful: new tools of this type start admin-only and asking for approval.
    default_admin_only = True
    default_needs_approval = True

    def describe(self, config: Config) -> str:
        return (
            "Run a Python 3 script and get its stdout, stderr and exit code. Use it for calculations, data "
            f"processing and checks that need real code. Limits: {config.timeout_seconds:g} s, "
            f"{config.memory_mb} MB of memory per process, no network; the standard library is there, and files "
            "go to a private scratch directory. Print results to see them."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        settings = ctx.runtime.settings
        try:
            data, sandboxed = await run_snippet(input.code, input.stdin, config, settings.python_sandbox_user,
                                                [str(p) for p in settings.private_paths()])
        except sandbox.SandboxUnavailable as exc:
            return ToolResult.fail(f"the python sandbox is unavailable, so nothing ran: {exc}")
        if data["timedOut"]:
            error = f"the script ran longer than {config.timeout_seconds:g} s"
            return ToolResult(success=False, data=data, error=error, metadata={"sandboxed": sandboxed})
        if data["exitCode"] != 0:
            tail = str(data["stderr"]).strip().splitlines()[-1:] or [f"exit code {data['exitCode']}"]
            return ToolResult(success=False, data=data, error=f"the script failed: {tail[0]}",
                              metadata={"sandboxed": sandboxed})
        return ToolResult.ok(data, sandboxed=sandboxed)


TOOL_TYPE = PythonTool()
