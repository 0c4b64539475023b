"""The python tool's snippets are confined by the operating system, not by the interpreter.

Each test tries one escape that worked against the earlier in-process guard, or that a careful attacker
would try next. Where host permissions alone would already stop it (root-owned files), the target is made
reachable by the sandbox user first, so that only the sandbox stands in the way; a control shows that
the sandbox user really could get there without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
import uvloop

from agentloft.app import build_runtime
from agentloft.core.runtime import Runtime
from agentloft.core.settings import load_settings
from agentloft.tools import sandbox
from agentloft.tools.types.python_exec import TOOL_TYPE as PY
from agentloft.tools.types.python_exec import Config as PythonConfig
from agentloft.tools.types.python_exec import limits, run_snippet
from tests.tools.types.conftest import Run, make_ctx, processes_with, wait_until_gone
from tests.tools.types.local_server import LocalWeb

SANDBOX_USER = "agentloft-sandbox"  # the default of AGENTLOFT_PYTHON_SANDBOX_USER


def sandbox_account() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        pytest.fail(f"the user {SANDBOX_USER} does not exist: run scripts/setup-sandbox (or scripts/test) as root")
USR_PROBE = Path("/usr/lib/agentloft-probe")


def as_sandbox_user(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` as the sandbox user but outside the sandbox: the control for what only the sandbox stops."""
    account = sandbox_account()
    return subprocess.run(["/usr/bin/python3", "-I", "-c", code], user=account.pw_uid, group=account.pw_gid,
                          extra_groups=[], capture_output=True, text=True, cwd="/", timeout=30, check=False)


def existing(*paths: Path) -> list[Path]:
    return [p for p in paths if p.exists()]


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A directory on the host that the sandbox user may read and write (mode 0777)."""
    path = Path(tempfile.mkdtemp(prefix="agentloft-open-"))
    path.chmod(0o777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
async def rt(open_dir: Path, template_db: Path) -> AsyncIterator[Runtime]:
    """A runtime whose data directory and database file the sandbox user could read, were it not hidden."""
    data = open_dir / "data"
    data.mkdir(mode=0o755)
    shutil.copy(template_db, data / "agentloft.db")
    (data / "agentloft.db").chmod(0o644)
    runtime = build_runtime(load_settings(data_dir=data, env="test", secret_key="test-secret-key"))
    yield runtime
    await runtime.db.dispose()


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[bytes]]:
    """A host process of the sandbox user itself: only the PID namespace keeps a snippet from signalling it."""
    account = sandbox_account()
    proc = subprocess.Popen(["sleep", "300"], user=account.pw_uid, group=account.pw_gid, extra_groups=[])
    yield proc
    proc.kill()
    proc.wait()


async def test_the_server_database_cannot_be_opened(run: Run, rt: Runtime) -> None:
    db_file = rt.settings.data_dir / "agentloft.db"
    steal = (f"import sqlite3\nrows = sqlite3.connect('file:{db_file}?immutable=1', uri=True)"
             ".execute('select version_num from alembic_version').fetchall()\nprint('stolen', rows)")
    control = as_sandbox_user(steal)
    assert control.returncode == 0 and "stolen [(" in control.stdout, control.stderr
    result = await run(PY, {"code": steal})
    assert not result.success
    assert result.error == "the script failed: sqlite3.OperationalError: unable to open database file"
    assert "stolen" not in result.data["stdout"]
    via_proc = await run(PY, {"code": f"import os\nprint(os.path.exists({str(rt.settings.data_dir)!r}), "
                                      f"os.path.exists('/proc/{os.getpid()}/root{db_file}'))"})
    assert via_proc.success and via_proc.data["stdout"] == "False False\n"


# What a snippet sees of each path it names: its entries, its size, or the error.
LOOK = (
    "import json, os, sys\nseen = {}\nfor path in sys.argv[1:]:\n"
    "    try: seen[path] = sorted(os.listdir(path)) if os.path.isdir(path) else len(open(path, 'rb').read())\n"
    "    except OSError as exc: seen[path] = type(exc).__name__\n"
    "print(json.dumps(seen))\n"
)


def readable_data(parent: Path, template_db: Path) -> Path:
    """A data dir under ``parent`` whose database and key file anybody could read (0755/0644)."""
    data = parent / "data"
    data.mkdir(mode=0o755)
    shutil.copy(template_db, data / "agentloft.db")
    (data / "secret_key").write_text("key")
    for path in (data / "agentloft.db", data / "secret_key"):
        path.chmod(0o644)
    return data


@pytest.fixture
def usr_dir() -> Iterator[Path]:
    """A directory under ``/usr``, which every snippet's sandbox binds whole."""
    path = Path(tempfile.mkdtemp(prefix="agentloft-test-", dir="/usr/local/share"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


async def test_a_data_dir_under_usr_stays_hidden(usr_dir: Path, template_db: Path) -> None:
    data = readable_data(usr_dir, template_db)
    control = as_sandbox_user(f"print(len(open('{data}/agentloft.db', 'rb').read()) > 0)")
    assert control.stdout == "True\n", control.stderr
    runtime = build_runtime(load_settings(data_dir=data, env="test", secret_key="k"))
    try:
        code = f"import sys\nsys.argv[1:] = [{str(usr_dir)!r}, {str(data)!r}, '{data}/agentloft.db']\n{LOOK}"
        result = await PY.execute(PY.Input(code=code), PythonConfig(), make_ctx(runtime, PY))
    finally:
        await runtime.db.dispose()
    assert result.success, result.error
    assert json.loads(result.data["stdout"]) == {str(usr_dir): ["data"], str(data): "PermissionError",
                                                 f"{data}/agentloft.db": "PermissionError"}


async def test_a_data_dir_inside_a_bound_prefix_stays_hidden(open_dir: Path, template_db: Path) -> None:
    """An interpreter outside ``/usr`` (a pyenv build) has its prefix bound; a data dir under it was shown."""
    prefix = open_dir / "prefix"
    prefix.mkdir(mode=0o755)
    data = readable_data(prefix, template_db)
    user = sandbox.sandbox_user(SANDBOX_USER)
    command = ["/usr/bin/python3", "-I", "-c", LOOK, f"{data}/secret_key", str(data)]

    async def look(private: list[str]) -> object:
        done = await sandbox.run_confined(command, user=user, limits=limits(PythonConfig()), wall_seconds=30,
                                          output_cap=10_000, read_only=[str(prefix)], private=private)
        assert done.exit_code == 0, done.stderr
        return json.loads(done.stdout)

    assert await look([]) == {f"{data}/secret_key": 3, str(data): ["agentloft.db", "secret_key"]}
    assert await look([str(data)]) == {f"{data}/secret_key": "PermissionError", str(data): "PermissionError"}


async def test_overwriting_the_interpreter_gains_nothing(run: Run, victim: subprocess.Popen[bytes]) -> None:
    """The old escape: replace the guard in ``__main__``, then run a shell, fork and signal the server.
    With no guard to replace, a shell runs, but as the sandbox user and blind to every host process."""
    server = os.getpid()
    code = (
        "def wipe(names):\n"
        "    for name in list(names):\n"
        "        if name not in ('__builtins__', '__name__'): del names[name]\n"
        "wipe(vars(__import__('__main__')))\n"
        "import os, signal, subprocess\n"
        f"shell = subprocess.run(['sh', '-c', 'id -u; kill -TERM {server} {victim.pid}'], capture_output=True, "
        "text=True)\n"
        "print(shell.stdout.strip(), 'No such process' in shell.stderr, flush=True)\n"
        f"for pid in ({server}, {victim.pid}):\n"
        "    try: os.kill(pid, signal.SIGKILL)\n"
        "    except ProcessLookupError: print('no such process', pid == " + str(server) + ", flush=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    try: os.kill(-1, signal.SIGKILL)\n"
        "    except ProcessLookupError: os._exit(7)\n"  # nothing it may signal: the snippet is the namespace's init
        "    os._exit(0)\n"
        "print(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))\n"
    )
    result = await run(PY, {"code": code})
    assert result.success, result.error
    assert result.data["stdout"] == f"{sandbox_account().pw_uid} True\nno such process True\nno such process False\n7\n"
    assert victim.poll() is None  # still alive: kill(-1) reached no process outside the sandbox


async def test_etc_shadow_and_the_host_etc_are_not_there(run: Run) -> None:
    result = await run(PY, {"code": "import os\nprint(os.path.exists('/etc'))\nprint(open('/etc/shadow').read())"})
    assert not result.success and result.data["stdout"] == "False\n"
    assert result.error == "the script failed: FileNotFoundError: [Errno 2] No such file or directory: '/etc/shadow'"


async def test_the_server_environment_and_processes_are_not_visible(run: Run,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    token = secrets.token_hex(8)
    monkeypatch.setenv("AGENTLOFT_PROBE_SECRET", token)
    code = (
        "import os\n"
        "pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())\n"
        "environs = b''.join(open(f'/proc/{p}/environ', 'rb').read() for p in pids)\n"
        f"print(pids, {token!r} in str(os.environ) or {token.encode()!r} in environs, "
        f"os.path.exists('/proc/{os.getpid()}/environ'))\n"
    )
    result = await run(PY, {"code": code})
    assert result.success, result.error
    assert result.data["stdout"] == "[1] False False\n"  # the snippet alone


async def test_writes_land_only_in_the_private_scratch_space(run: Run, open_dir: Path) -> None:
    target = open_dir / "written-by-snippet"
    control = as_sandbox_user(f"open({str(target)!r}, 'w').write('x')")
    assert control.returncode == 0 and target.exists()
    target.unlink()
    host_tmp = Path("/tmp") / f"agentloft-probe-{secrets.token_hex(6)}"
    for code, error in (
        (f"open({str(target)!r}, 'w').write('x')", "FileNotFoundError"),
        (f"open('{USR_PROBE}', 'w').write('x')", "OSError: [Errno 30] Read-only file system"),
        ("import os; os.symlink('/usr/lib', 'lib'); open('lib/agentloft-probe', 'w')", "Read-only file system"),
        (f"open({str(host_tmp)!r}, 'w').write('private'); print(open({str(host_tmp)!r}).read()); raise SystemExit(3)",
         "exit code 3"),
    ):
        result = await run(PY, {"code": code})
        assert not result.success and error in result.error, (code, result.error)
    assert existing(target, host_tmp, USR_PROBE) == []


async def test_the_scratch_space_and_file_size_are_limited(run: Run) -> None:
    big_file = await run(PY, {"code": "open('big', 'wb').write(b'x' * (3 * 1024 * 1024))"}, {"maxFileMb": 2})
    assert not big_file.success and big_file.error == "the script failed: OSError: [Errno 27] File too large"
    full = await run(PY, {"code": "for i in range(10): open(f'f{i}', 'wb').write(b'x' * (1024 * 1024))"},
                     {"scratchMb": 4})
    assert not full.success and "No space left on device" in full.error


async def test_no_socket_reaches_anything(run: Run, web: LocalWeb) -> None:
    code = (
        "import socket, urllib.request\n"
        "print(socket.if_nameindex())\n"
        "for target in [('127.0.0.1', " + web.url.rsplit(":", 1)[1] + "), ('10.0.0.1', 80), ('1.1.1.1', 53)]:\n"
        "    s = socket.socket(); s.settimeout(2)\n"
        "    try: s.connect(target); print('connected', target)\n"
        "    except OSError as e: print(type(e).__name__)\n"
        f"urllib.request.urlopen('{web.url}/page', timeout=2)\n"
    )
    result = await run(PY, {"code": code})
    assert not result.success and "Connection refused" in result.error
    assert result.data["stdout"] == ("[(1, 'lo')]\nConnectionRefusedError\nOSError\nOSError\n")
    assert web.requests == []


async def test_a_low_process_limit_bounds_forking(run: Run) -> None:
    code = (
        "import os, time\nchildren = 0\n"
        "try:\n"
        "    while children < 100:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(30); os._exit(0)\n"
        "        children += 1\n"
        "except BlockingIOError as e: print(e)\n"
        "print(children)\n"
    )
    result = await run(PY, {"code": code}, {"maxProcesses": 8})
    assert result.success, result.error
    refused, count = result.data["stdout"].splitlines()
    assert refused == "[Errno 11] Resource temporarily unavailable"
    assert 1 <= int(count) <= 6  # 8 minus bwrap and the snippet


async def test_a_fork_bomb_ends_with_the_run_and_leaves_nothing(run: Run) -> None:
    marker = f"fork-bomb-{secrets.token_hex(6)}"
    bomb = "import os\\nwhile True:\\n    try: os.fork()\\n    except OSError: pass"
    code = f"import os\nos.execv('/usr/bin/python3', ['python3', '-c', '{bomb}', '{marker}'])"
    started = time.monotonic()
    result = await run(PY, {"code": code}, {"maxProcesses": 16, "timeoutSeconds": 2})
    assert time.monotonic() - started < 10
    assert not result.success and result.data["timedOut"] is True
    wait_until_gone(marker)


async def test_the_wall_clock_limit_kills_detached_children(run: Run) -> None:
    marker = f"{secrets.randbelow(10**6)}.{secrets.randbelow(10**6)}"
    code = ("import os, time\nif os.fork() == 0:\n    os.setsid()\n"
            f"    os.execv('/usr/bin/sleep', ['sleep', '{marker}'])\ntime.sleep(60)")
    result = await run(PY, {"code": code}, {"timeoutSeconds": 1})
    assert result.data["timedOut"] is True
    wait_until_gone(marker)


async def test_memory_bombs_hit_the_limit(run: Run) -> None:
    for code in ("x = bytearray(10 ** 10)", "parts = []\nwhile True: parts.append(bytearray(10 ** 7))",
                 "s = 'x'\nwhile True: s += s"):
        started = time.monotonic()
        result = await run(PY, {"code": code}, {"memoryMb": 128})
        assert not result.success and "MemoryError" in result.error, (code, result.error)
        assert time.monotonic() - started < 5
    assert processes_with("agentloft-never-started") == []


FILL = '''import ctypes, errno, json, os
MB = 1 << 20
out = {}
for path in ("/big", "/dev/big", "/dev/shm/big", "/tmp/big"):
    written = 0
    try:
        with open(path, "wb", buffering=0) as f:
            while written < 200 * MB:
                written += f.write(b"x" * MB)
        out[path] = [written // MB, None]
    except OSError as exc:
        out[path] = [written // MB, errno.errorcode[exc.errno]]
    if os.path.exists(path):
        os.unlink(path)
libc = ctypes.CDLL(None, use_errno=True)
segment = libc.shmget(0, 200 * MB, 0o1600)
out["shmget"] = errno.errorcode[ctypes.get_errno()] if segment < 0 else "made"
try:
    os.memfd_create("fill")
    out["memfd_create"] = "made"
except OSError as exc:
    out["memfd_create"] = errno.errorcode[exc.errno]
print(json.dumps(out))
'''


async def test_nothing_outside_the_budget_can_be_filled(run: Run) -> None:
    """bubblewrap's root and /dev were tmpfs without a size (2 GB written into / in 2.2 s), /dev/shm with
    them; System V shared memory outlives every address space (2 GB from one process capped at 256 MB)."""
    result = await run(PY, {"code": FILL}, {"scratchMb": 16, "maxFileMb": 1024})
    assert result.success, result.error
    assert json.loads(result.data["stdout"]) == {
        "/big": [0, "EROFS"], "/dev/big": [0, "EROFS"], "/dev/shm/big": [16, "ENOSPC"], "/tmp/big": [16, "ENOSPC"],
        "shmget": "EPERM", "memfd_create": "EPERM",
    }


# Forks children until the process limit refuses one; each child fills its address space (touching every
# page) and waits; then the snippet adds up what its PID namespace's processes hold.
FORK_AND_FILL = """import os, sys
MB = 1 << 20
children, ready, hold = [], os.pipe(), os.pipe()
while True:
    try:
        pid = os.fork()
    except BlockingIOError:
        break
    if pid == 0:
        held = []
        try:
            while True:
                held.append(bytearray(b"x" * (4 * MB)))
        except MemoryError:
            pass
        os.write(ready[1], b"."); os.read(hold[0], 1); os._exit(0)  # held until the run ends
    children.append(pid)
for _ in children:
    os.read(ready[0], 1)
rss = 0
for pid in filter(str.isdigit, os.listdir("/proc")):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            rss += int(line.split()[1]) * 1024
print(len(children), rss)
"""


async def test_forked_children_stay_within_the_documented_budget(run: Run) -> None:
    """Each process is held to its address space; the run as a whole to processes × that, plus the
    tmpfs (``Limits.budget_bytes``). Ten children held 1.4 GB of a snippet limited to 256 MB each."""
    config = {"maxProcesses": 8, "memoryMb": 64, "scratchMb": 4}
    result = await run(PY, {"code": FORK_AND_FILL}, config)
    assert result.success, result.error
    children, rss = map(int, result.data["stdout"].split())
    assert 1 <= children <= 6  # 8 less bwrap and the snippet (less any other run's, as the user is shared)
    budget = limits(PythonConfig.model_validate(config)).budget_bytes
    assert budget == (8 * 64 + 3 * 4) << 20
    assert children * (32 << 20) < rss <= budget  # the children really hold memory, and no more than allowed


async def test_runs_that_time_out_do_not_use_up_the_process_budget(run: Run) -> None:
    """A killed run leaves no zombie of the sandbox user behind: such zombies wait for the host's init
    (slow here, absent in some containers) and count against the user's process limit."""
    tight = {"maxProcesses": 4, "timeoutSeconds": 0.5}  # bwrap and the snippet take two
    for _ in range(3):
        stuck = await run(PY, {"code": "import time\ntime.sleep(60)"}, tight)
        assert stuck.data["timedOut"] is True
    after = await run(PY, {"code": "print('room left')"}, tight)
    assert after.success, after.error


def test_snippets_run_on_the_event_loop_that_agentloft_serve_uses() -> None:
    """``agentloft serve`` runs on uvicorn's default loop, uvloop (``uvicorn[standard]`` installs it), whose
    subprocesses refuse ``user``/``group``/``extra_groups``: every snippet failed there with
    ``ValueError: unexpected kwargs`` while the tests, on asyncio's own loop, passed."""
    config = PythonConfig.model_validate({})
    code = "import os\nprint(os.getuid(), os.getgid(), os.getgroups())"
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        data, sandboxed = runner.run(run_snippet(code, "", config, SANDBOX_USER))
    account = sandbox_account()
    assert sandboxed and data["exitCode"] == 0, data
    assert data["stdout"] == f"{account.pw_uid} {account.pw_gid} []\n"
