"""Python: run a snippet in a separate, limited process and return its output.

How the child is confined (defence in depth; none of it is a hard security boundary, which is why the
type is admin-only and needs approval by default):
- a new interpreter, ``python -I`` (isolated: no environment variables, no user site, no cwd on the
  path), with an environment of its own (nothing of the server's, secrets included);
- resource limits set in ``preexec_fn``: address space (``RLIMIT_AS``), CPU seconds (``RLIMIT_CPU``),
  file size (``RLIMIT_FSIZE``), no core dumps; plus a wall-clock limit after which its whole process
  group is killed;
- a fresh temporary directory as working directory and ``HOME``, removed afterwards;
- no network, twice: when ``unshare -rn`` works on the host (a new, empty network namespace; probed once)
  the child runs inside it; and always, a bootstrap installs an audit hook (``sys.addaudithook``, which
  cannot be removed) that refuses socket creation and connection, starting other programs
  (``subprocess``, ``os.system``/``exec``/``spawn``/``fork``) and loading native code through ``ctypes``,
  refuses to open files in the server's data directory, and refuses writes (open for writing, remove,
  rename, chmod, ...) outside the scratch directory;
- stdout and stderr are read up to a limit and the rest discarded.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from pydantic import Field

from agentloft.core.schemas import ApiModel
from agentloft.tools.base import ToolContext, ToolResult, ToolType

BOOTSTRAP = r'''
import os, sys
_SCRATCH = os.path.realpath(sys.argv[2])
_DENIED_ROOTS = tuple(p for p in sys.argv[3:] if p)
_BLOCKED_PREFIXES = ("socket.", "subprocess.", "os.exec", "os.spawn", "os.posix_spawn", "os.fork",
                     "os.forkpty", "os.system", "pty.", "ctypes.", "os.kill", "os.killpg")
_CHANGES = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.symlink",
            "os.link", "os.truncate", "os.utime", "shutil.rmtree", "os.chflags", "os.setxattr",
            "os.removexattr"}
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_realpath, _fspath, _sep = os.path.realpath, os.fsdecode, os.sep
def _inside(real, root):
    return real == root or real.startswith(root + _sep)
def _writable(path):
    real = _realpath(path)
    return _inside(real, _SCRATCH) or real == "/dev/null"
def _guard(event, args):
    if event.startswith(_BLOCKED_PREFIXES) and event != "socket.gethostname":
        raise PermissionError(f"{event} is not allowed in this sandbox (no network, no processes)")
    if event == "open" and isinstance(args[0], (str, bytes)):
        path = _fspath(args[0])
        if any(_inside(_realpath(path), r) for r in _DENIED_ROOTS):
            raise PermissionError(f"{path} is not readable from this sandbox")
        if isinstance(args[2], int) and args[2] & _WRITE and not _writable(path):
            raise PermissionError(f"{path}: only the scratch directory is writable")
    elif event in _CHANGES:
        for arg in args:
            if isinstance(arg, (str, bytes)) and not _writable(_fspath(arg)):
                raise PermissionError(f"{_fspath(arg)}: only the scratch directory is writable")
_code_path = sys.argv[1]
with open(_code_path, encoding="utf-8") as _f:
    _source = _f.read()
sys.argv = ["snippet.py"]
sys.addaudithook(_guard)
del _f, _guard
_globals = {"__name__": "__main__", "__builtins__": __builtins__}
exec(compile(_source, "snippet.py", "exec"), _globals)
'''


class Config(ApiModel):
    timeout_seconds: float = Field(default=10, gt=0, le=300, description="Wall-clock limit for a run.")
    memory_mb: int = Field(default=256, ge=32, le=8_192, description="Address-space limit of the process, in MB.")
    max_output_chars: int = Field(
        default=10_000, ge=100, le=1_000_000, description="Longest stdout/stderr kept (each)."
    )
    max_file_mb: int = Field(default=16, ge=1, le=1_024, description="Largest file the snippet may write, in MB.")


class Input(ApiModel):
    code: str = Field(
        min_length=1,
        max_length=100_000,
        description="Python 3 code to run as a script. Print what you want to see; the output is returned. "
        "No network access; the standard library is available; files go to a scratch directory.",
    )
    stdin: str = Field(default="", max_length=1_000_000, description="Text passed to the script's standard input.")


@lru_cache(maxsize=1)
def network_namespace_prefix() -> tuple[str, ...]:
    """``("unshare", "-rn")`` when this host lets us create a network namespace, else nothing."""
    exe = shutil.which("unshare")
    if not exe:
        return ()
    try:
        done = subprocess.run([exe, "-rn", "true"], capture_output=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return ()
    return (exe, "-rn") if done.returncode == 0 else ()


def _limits(config: Config) -> Callable[[], None]:
    memory = config.memory_mb * 1024 * 1024
    cpu = int(config.timeout_seconds) + 1
    fsize = config.max_file_mb * 1024 * 1024

    def apply() -> None:  # runs in the child between fork and exec: only async-signal-safe-ish calls
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

    return apply


async def _read_capped(stream: asyncio.StreamReader | None, limit: int) -> tuple[bytes, bool]:
    assert stream is not None  # the child's stdout and stderr are pipes
    kept = bytearray()
    dropped = False
    while chunk := await stream.read(65536):
        room = limit - len(kept)
        if room > 0:
            kept.extend(chunk[:room])
        if len(chunk) > max(room, 0):
            dropped = True
    return bytes(kept), dropped


async def _feed(proc: asyncio.subprocess.Process, stdin: str) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if stdin:
            proc.stdin.write(stdin.encode())
            await proc.stdin.drain()
        proc.stdin.close()


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


async def run_snippet(code: str, stdin: str, config: Config, denied_roots: list[str]) -> dict[str, object]:
    """Run ``code`` confined; return stdout, stderr, exit code and whether it timed out."""
    scratch = Path(tempfile.mkdtemp(prefix="agentloft-py-"))
    try:
        (scratch / ".snippet.py").write_text(code, encoding="utf-8")
        prefix = await asyncio.to_thread(network_namespace_prefix)
        argv = [*prefix, sys.executable, "-I", "-B", "-X", "utf8", "-c",
                BOOTSTRAP, str(scratch / ".snippet.py"), str(scratch), *denied_roots]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(scratch), "LANG": "C.UTF-8",
               "TMPDIR": str(scratch), "PYTHONIOENCODING": "utf-8"}
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=scratch, env=env, start_new_session=True,
            preexec_fn=_limits(config),
        )
        cap = config.max_output_chars * 4
        readers = asyncio.ensure_future(asyncio.gather(
            _read_capped(proc.stdout, cap), _read_capped(proc.stderr, cap)
        ))
        timed_out = False
        try:
            async with asyncio.timeout(config.timeout_seconds):
                await _feed(proc, stdin)
                await asyncio.shield(readers)
                await proc.wait()
        except TimeoutError:
            timed_out = True
        finally:
            if proc.returncode is None:
                _kill_group(proc)
                await proc.wait()
        (out, out_cut), (err, err_cut) = await readers
        return _outcome(proc.returncode, out, err, out_cut, err_cut, timed_out, config.max_output_chars)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _outcome(code: int | None, out: bytes, err: bytes, out_cut: bool, err_cut: bool, timed_out: bool,
             limit: int) -> dict[str, object]:
    stdout = out.decode("utf-8", errors="replace")
    stderr = err.decode("utf-8", errors="replace")
    return {
        "exitCode": code,
        "stdout": stdout[:limit],
        "stderr": stderr[-limit:] if len(stderr) > limit else stderr,
        "truncated": out_cut or err_cut or len(stdout) > limit or len(stderr) > limit,
        "timedOut": timed_out,
    }


class PythonTool(ToolType[Config, Input]):
    slug = "python"
    name = "Python"
    description = "Runs a Python snippet in a separate process with time and memory limits and no network."
    Config = Config
    Input = Input
    # Running code is powerful: new tools of this type start admin-only and asking for approval.
    default_admin_only = True
    default_needs_approval = True

    def describe(self, config: Config) -> str:
        return (
            "Run a Python 3 script and get its stdout, stderr and exit code. Use it for calculations, data "
            f"processing and checks that need real code. Limits: {config.timeout_seconds:g} s, "
            f"{config.memory_mb} MB of memory, no network, no subprocesses; print results to see them."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        denied = [str(ctx.runtime.settings.data_dir.resolve())]
        data = await run_snippet(input.code, input.stdin, config, denied)
        if data["timedOut"]:
            error = f"the script ran longer than {config.timeout_seconds:g} s"
            return ToolResult(success=False, data=data, error=error)
        if data["exitCode"] != 0:
            tail = str(data["stderr"]).strip().splitlines()[-1:] or [f"exit code {data['exitCode']}"]
            return ToolResult(success=False, data=data, error=f"the script failed: {tail[0]}")
        return ToolResult.ok(data)


TOOL_TYPE = PythonTool()
