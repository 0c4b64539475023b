"""The python type runs real child processes; each case checks one confinement."""

from __future__ import annotations

import pwd
import subprocess
import time
from pathlib import Path

import pytest

from agentloft.core.runtime import Runtime
from agentloft.tools import sandbox
from agentloft.tools.types.python_exec import TOOL_TYPE as PY
from tests.tools.types.conftest import Run


async def test_runs_code_and_returns_output(run: Run) -> None:
    result = await run(PY, {"code": "import sys, math\nprint(math.factorial(10))\nprint('warn', file=sys.stderr)\n"
                                    "print(input()[::-1])", "stdin": "olleh\n"})
    assert result.success, result.error
    assert result.data == {"exitCode": 0, "stdout": "3628800\nhello\n", "stderr": "warn\n", "truncated": False,
                           "timedOut": False}


async def test_errors_are_failed_results_with_the_traceback(run: Run) -> None:
    result = await run(PY, {"code": "x = 1\nraise ValueError('boom')"})
    assert not result.success and result.error == "the script failed: ValueError: boom"
    assert result.data["exitCode"] == 1 and 'File "snippet.py", line 2' in result.data["stderr"]
    exited = await run(PY, {"code": "import sys; sys.exit(3)"})
    assert not exited.success and exited.data["exitCode"] == 3


async def test_wall_clock_limit_kills_the_process(run: Run) -> None:
    started = time.perf_counter()
    result = await run(PY, {"code": "import time\nprint('start', flush=True)\ntime.sleep(30)"},
                       {"timeoutSeconds": 0.5})
    assert time.perf_counter() - started < 3
    assert not result.success and result.error == "the script ran longer than 0.5 s"
    assert result.data["timedOut"] is True and result.data["stdout"] == "start\n"


async def test_cpu_bound_loop_is_stopped(run: Run) -> None:
    started = time.perf_counter()
    result = await run(PY, {"code": "while True: pass"}, {"timeoutSeconds": 0.5})
    assert time.perf_counter() - started < 3 and result.data["timedOut"] is True


async def test_memory_limit(run: Run) -> None:
    result = await run(PY, {"code": "x = bytearray(400 * 1024 * 1024)\nprint('allocated')"}, {"memoryMb": 128})
    assert not result.success and "MemoryError" in result.error
    assert "allocated" not in result.data["stdout"]


async def test_scratch_directory_and_clean_environment(run: Run) -> None:
    code = ("import os, pathlib\nprint(os.listdir('.'), os.listdir('/tmp'))\npathlib.Path('out.txt').write_text('ok')\n"
            "print(os.getcwd(), open('out.txt').read())\nprint(sorted(os.environ))")
    result = await run(PY, {"code": code})
    assert result.success, result.error
    assert result.data["stdout"] == "[] []\n/scratch ok\n['HOME', 'LANG', 'PATH', 'PWD', 'TMPDIR']\n"
    assert result.metadata["sandboxed"] is True


async def test_output_is_capped(run: Run) -> None:
    result = await run(PY, {"code": "print('x' * 1_000_000)"}, {"maxOutputChars": 100})
    assert result.success and len(result.data["stdout"]) == 100 and result.data["truncated"] is True


async def test_bad_inputs(run: Run) -> None:
    result = await run(PY, {"code": ""})
    assert not result.success and "code: String should have at least 1 character" in result.error
    syntax = await run(PY, {"code": "def ("})
    assert not syntax.success and "SyntaxError" in syntax.error


async def test_ordinary_code_still_works(run: Run) -> None:
    """The standard library, threads, a child process and files in the scratch directory and /tmp."""
    code = (
        "import json, sqlite3, decimal, hashlib, zlib, re, datetime, subprocess, tempfile, os, shutil\n"
        "from concurrent.futures import ThreadPoolExecutor\n"
        "db = sqlite3.connect(':memory:'); db.execute('create table t(x)'); db.execute('insert into t values (41)')\n"
        "print(db.execute('select x + 1 from t').fetchone()[0])\n"
        "print(decimal.Decimal('0.1') + decimal.Decimal('0.2'), hashlib.sha256(b'a').hexdigest()[:8])\n"
        "print(len(zlib.compress(b'x' * 10000)) < 100, re.sub(r'\\d', '#', 'a1b2'))\n"
        "print(datetime.date(2024, 2, 29).isoformat(), json.dumps({'k': [1, 2]}))\n"
        "with ThreadPoolExecutor(4) as pool: print(sum(pool.map(lambda n: n * n, range(10))))\n"
        "print(subprocess.run(['echo', 'child'], capture_output=True, text=True).stdout.strip())\n"
        "with tempfile.NamedTemporaryFile('w', delete=False) as f: f.write('tmp')\n"
        "os.makedirs('a/b'); shutil.move(f.name, 'a/b/c'); print(open('a/b/c').read())\n"
    )
    result = await run(PY, {"code": code})
    assert result.success, result.error
    assert result.data["stdout"].splitlines() == [
        "42", "0.3 ca978112", "True a#b#", '2024-02-29 {"k": [1, 2]}', "285", "child", "tmp"]


async def test_a_five_second_computation_finishes(run: Run) -> None:
    code = ("import time\nstarted, n = time.monotonic(), 0\n"
            "while time.monotonic() - started < 5: n += sum(range(1000))\nprint(n > 0)")
    result = await run(PY, {"code": code}, {"timeoutSeconds": 10})
    assert result.success, result.error
    assert result.data["stdout"] == "True\n" and result.data["timedOut"] is False


async def test_refuses_to_run_without_a_sandbox_user(run: Run, rt: Runtime) -> None:
    rt.settings.python_sandbox_user = "agentloft-no-such-user"
    result = await run(PY, {"code": "print('ran')"})
    assert not result.success and result.data is None
    assert result.error.startswith("the python sandbox is unavailable, so nothing ran: the sandbox user "
                                   "'agentloft-no-such-user' does not exist (create it as root: useradd --system")


async def test_refuses_to_run_without_bubblewrap(run: Run, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(sandbox, "PATH_ENV", str(tmp_path))  # a PATH on which neither bwrap nor prlimit exists
    result = await run(PY, {"code": "print('ran')"})
    assert not result.success
    assert result.error == ("the python sandbox is unavailable, so nothing ran: bwrap is not installed "
                            "(Debian: apt-get install bubblewrap)")


async def test_a_failing_sandbox_probe_is_a_clear_refusal() -> None:
    with pytest.raises(sandbox.SandboxUnavailable) as refused:
        await sandbox.ensure_sandbox("agentloft-sandbox", ["/usr/bin/false"])
    assert str(refused.value).startswith("bubblewrap could not start a sandbox as 'agentloft-sandbox': exit code 1 "
                                         "(the kernel must allow unprivileged user namespaces")


def test_a_server_that_is_not_root_cannot_switch_users() -> None:
    """Run the availability check as an ordinary user (``nobody``), as a server started without root would."""
    src = Path(sandbox.__file__).parents[2]
    check = ("import sys; sys.path.insert(0, sys.argv[1]); from agentloft.tools import sandbox\n"
             "try: sandbox.sandbox_user('agentloft-sandbox')\nexcept sandbox.SandboxUnavailable as e: print(e)")
    done = subprocess.run(["/usr/bin/python3", "-I", "-c", check, str(src)], user="nobody", group="nogroup",
                          extra_groups=[], capture_output=True, text=True, check=True, cwd="/")
    assert done.stdout.strip() == (f"the server runs as uid {pwd.getpwnam('nobody').pw_uid}, not root, so it cannot "
                                   "start programs as 'agentloft-sandbox'; run the server as root (it switches to the "
                                   "sandbox user for each run)")


async def test_an_admin_may_opt_out_unsafely(run: Run, rt: Runtime) -> None:
    rt.settings.python_sandbox_user = "agentloft-no-such-user"
    result = await run(PY, {"code": "import os\nprint(os.getcwd().startswith('/scratch'), sorted(os.environ))"},
                       {"unsafeWithoutSandbox": True})
    assert result.success, result.error
    assert result.metadata["sandboxed"] is False
    assert result.data["stdout"] == "False ['HOME', 'LANG', 'PATH', 'TMPDIR']\n"
    field = PY.Config.model_json_schema()["properties"]["unsafeWithoutSandbox"]
    assert field["default"] is False and field["description"].startswith("UNSAFE.")
