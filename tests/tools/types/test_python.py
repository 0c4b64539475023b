"""The python type runs real child processes; each case checks one confinement."""

from __future__ import annotations

import time
from pathlib import Path

from agentloft.core.runtime import Runtime
from agentloft.tools.types.python_exec import TOOL_TYPE as PY
from tests.tools.types.conftest import Run
from tests.tools.types.local_server import LocalWeb


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


async def test_no_network(run: Run, web: LocalWeb) -> None:
    code = (
        "import urllib.request\n"
        f"print(urllib.request.urlopen('{web.url}/page', timeout=2).read()[:20])\n"
    )
    result = await run(PY, {"code": code})
    assert not result.success
    assert "is not allowed in this sandbox" in result.error or "Network is unreachable" in result.data["stderr"]
    assert web.requests == []
    raw = await run(PY, {"code": "import socket\nsocket.socket()"})
    assert not raw.success and "socket.__new__ is not allowed in this sandbox" in raw.error


async def test_no_subprocesses(run: Run) -> None:
    for code in ("import subprocess; subprocess.run(['true'])", "import os; os.system('true')",
                 "import os; os.fork()"):
        result = await run(PY, {"code": code})
        assert not result.success and "is not allowed in this sandbox" in result.error, code


async def test_scratch_directory_and_clean_environment(run: Run) -> None:
    code = ("import os, pathlib\npathlib.Path('out.txt').write_text('ok')\n"
            "print(os.getcwd().rsplit('/', 1)[-1].startswith('agentloft-py-'), open('out.txt').read())\n"
            "print(sorted(k for k in os.environ if k.startswith('AGENTLOFT')))")
    result = await run(PY, {"code": code})
    assert result.success, result.error
    assert result.data["stdout"] == "True ok\n[]\n"


async def test_data_directory_is_not_readable(run: Run, rt: Runtime) -> None:
    db_file = rt.settings.data_dir / "agentloft.core.db"
    result = await run(PY, {"code": f"print(open({str(db_file)!r}, 'rb').read(16))"})
    assert not result.success and "is not readable from this sandbox" in result.error


async def test_output_is_capped(run: Run) -> None:
    result = await run(PY, {"code": "print('x' * 1_000_000)"}, {"maxOutputChars": 100})
    assert result.success and len(result.data["stdout"]) == 100 and result.data["truncated"] is True


async def test_bad_inputs(run: Run) -> None:
    result = await run(PY, {"code": ""})
    assert not result.success and "code: String should have at least 1 character" in result.error
    syntax = await run(PY, {"code": "def ("})
    assert not syntax.success and "SyntaxError" in syntax.error


async def test_writes_outside_the_scratch_directory_are_refused(run: Run, tmp_path: Path) -> None:
    target = tmp_path / "outside.txt"
    target.write_text("keep")
    for code in (f"open({str(target)!r}, 'w').write('x')", f"import os; os.remove({str(target)!r})",
                 f"import os; os.rename({str(target)!r}, 'moved')", f"import os; os.chmod({str(target)!r}, 0)",
                 "import os; os.symlink('/etc', 'etc'); open('etc/agentloft-probe', 'w')"):
        result = await run(PY, {"code": code})
        assert not result.success and "only the scratch directory is writable" in result.error, code
    assert target.read_text() == "keep"
    inside = await run(PY, {"code": "import os, tempfile\nos.mkdir('d')\nopen('d/f', 'w').write('1')\n"
                                    "os.rename('d/f', 'd/g')\nwith tempfile.NamedTemporaryFile() as t: print(t.name)"})
    assert inside.success, inside.error
