"""Read a document's text in the sandbox: the server's half of ``files.extract_worker``.

Parsing untrusted files is where platforms like this one get hurt (zip bombs in Office files, bugs in
PDF parsers), so no document is parsed in the server process. Each is read by a fresh interpreter in
``tools.sandbox`` (bubblewrap, as the unprivileged ``AGENTLOFT_EXTRACT_SANDBOX_USER``, no network, the
server's data hidden) under the limits of ``AGENTLOFT_EXTRACT_*``: CPU and wall-clock time, address
space, and the pages, characters and zip expansion the worker checks itself. Its own user, not the python
tool's: the process limit counts per user, and snippets must not use up the readers' budget.

The reader needs the parsing libraries, so the sandbox binds the server's installed packages read-only
(its ``site-packages`` and the directory the ``agentloft`` package is in; bubblewrap starts as root for
that, ``as_root``, since a server installed under ``/root`` keeps them where the sandbox user could not
reach them itself) and runs the sandbox's
interpreter (``tools.sandbox.interpreter``) with them added as site directories. Those packages may hold
compiled extensions, so the interpreter must be the server's Python version: the bootstrap checks that
and says so, and the first run of each process (``available``) imports every library in the sandbox
before any file is trusted to it, so a host that cannot run it is told at once and why.

How a run ends, and what it means for the file:

- the worker's pages on stdout (exit 0): the file is read;
- exit ``UNREADABLE`` with a reason, the wall-clock limit passed, the CPU limit's signal, or a memory
  failure: ``Unreadable`` with that reason in words, so the file ends ``failed`` at once (trying again
  would end the same way);
- bubblewrap could not start (the user's process limit reached by readers at the same time, for
  instance): a plain error, so the job is tried again later;
- no sandbox on this host: ``SandboxUnavailable``, with the same reason the python tool gives.
"""

from __future__ import annotations

import json
import os
import signal
import site
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import agentloft
from agentloft.files.extract_worker import UNREADABLE
from agentloft.tools import sandbox

if TYPE_CHECKING:
    from agentloft.core.settings import Settings

# Runs as ``python -c``: checks its version, adds the server's packages, then runs the worker as ``-m``
# would. ``sys.argv``: the version the packages are for, the site directories (``os.pathsep``-separated),
# then the worker's own arguments.
BOOTSTRAP = """import runpy, site, sys
_want, _dirs = sys.argv[1], sys.argv[2]
if "%d.%d" % sys.version_info[:2] != _want:
    sys.stderr.write("the sandbox's Python is %d.%d, but the server's packages are for Python %s\\n"
                     % (sys.version_info[0], sys.version_info[1], _want))
    sys.exit(3)
for _dir in _dirs.split(":"):
    site.addsitedir(_dir)
sys.argv = ["extract_worker", *sys.argv[3:]]
runpy.run_module("agentloft.files.extract_worker", run_name="__main__", alter_sys=True)
"""
VERSION_MISMATCH = 3
PROCESSES = 16  # the reader's user, all readers of this host together: a reader takes two
SCRATCH_BYTES = 8 * 1024 * 1024
OPEN_FILES = 64
PAGE_OVERHEAD = 64  # bytes of JSON around each page's text


class Unreadable(Exception):
    """This file cannot be read; the message says why, for its owner."""


@dataclass(frozen=True)
class Reader:
    """How to start the worker on this host: the command's head and the paths it reads."""

    head: list[str]
    read_only: list[str]


def reader() -> Reader:
    exe, prefixes = sandbox.interpreter()
    package_parent = str(Path(agentloft.__file__).resolve().parent.parent)
    sites = list(dict.fromkeys([*site.getsitepackages(), package_parent]))
    sites = [p for p in sites if os.path.isdir(p)]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    head = [exe, "-I", "-B", "-X", "utf8", "-c", BOOTSTRAP, version, os.pathsep.join(sites)]
    return Reader(head=head, read_only=sorted({*prefixes, *sites}))


def limits(settings: Settings) -> sandbox.Limits:
    return sandbox.Limits(cpu_seconds=settings.extract_cpu_seconds, memory_bytes=settings.extract_memory_bytes,
                          processes=PROCESSES, file_bytes=1024 * 1024, open_files=OPEN_FILES,
                          scratch_bytes=SCRATCH_BYTES)


async def available(settings: Settings) -> sandbox.SandboxUser:
    """The reader's sandbox user, once the libraries imported in the sandbox (remembered while it works);
    ``SandboxUnavailable`` saying why not."""
    run = reader()
    return await sandbox.ensure_sandbox(settings.extract_sandbox_user, [*run.head, "probe"], run.read_only,
                                        as_root=True)


def _arguments(settings: Settings, family: str) -> list[str]:
    return [family, str(settings.extract_max_pages), str(settings.extract_max_chars),
            str(settings.extract_max_unzipped_bytes), str(settings.extract_max_zip_ratio)]


Pages = Sequence[tuple[int | None, str]]
"""What was read: each page's number (None for formats without pages) and text."""


async def read(settings: Settings, family: str, data: bytes) -> Pages:
    """The pages of ``data`` (a document of ``family``: pdf, docx, pptx, xlsx, html), read in the sandbox;
    ``Unreadable``, ``SandboxUnavailable`` or another error as the module docstring says."""
    user = await available(settings)
    run = reader()
    cap = settings.extract_max_chars * 6 + settings.extract_max_pages * PAGE_OVERHEAD + 4096
    done = await sandbox.run_confined(
        [*run.head, *_arguments(settings, family)], user=user, limits=limits(settings),
        wall_seconds=settings.extract_wall_seconds, output_cap=cap, stdin=data, read_only=run.read_only,
        private=[str(p) for p in settings.private_paths()], as_root=True)
    return outcome(done, settings)


def _last_line(data: bytes) -> str:
    lines = data.decode("utf-8", "replace").strip().splitlines()
    return lines[-1].strip()[:500] if lines else ""


def checked(stdout: bytes, settings: Settings) -> Pages:
    """The worker's pages, held to the shape and the limits again: what comes out of the sandbox is no more
    trusted than what went in (a parser the file took over could write anything)."""
    try:
        pages = [(p["number"], p["text"]) for p in json.loads(stdout)["pages"]]
    except (ValueError, TypeError, KeyError) as exc:
        raise Unreadable(f"damaged: the reader's answer was malformed ({type(exc).__name__})") from None
    if not all((n is None or type(n) is int) and isinstance(t, str) for n, t in pages):
        raise Unreadable("damaged: the reader's answer was malformed")
    if len(pages) > settings.extract_max_pages:
        raise Unreadable(f"too many pages: more than the {settings.extract_max_pages:,} this server reads from "
                         "one file")
    if sum(len(t) for _, t in pages) > settings.extract_max_chars:
        raise Unreadable(f"too much text: more than the {settings.extract_max_chars:,} characters this server "
                         "reads from one file")
    return pages


def outcome(done: sandbox.Completed, settings: Settings) -> Pages:
    """What a finished run means (see the module docstring)."""
    stderr = done.stderr.decode("utf-8", "replace")
    if done.timed_out:
        raise Unreadable(f"timed out: reading it took longer than {settings.extract_wall_seconds:g} s")
    if done.exit_code == 0 and not done.stdout_cut:
        return checked(done.stdout, settings)
    if done.exit_code == 0:
        raise Unreadable(f"too much text: more than the {settings.extract_max_chars:,} characters this server "
                         "reads from one file")
    if done.exit_code == UNREADABLE:
        raise Unreadable(_last_line(done.stderr) or "damaged")
    if done.exit_code in (128 + signal.SIGXCPU, 128 + signal.SIGKILL) and "bwrap:" not in stderr:
        raise Unreadable(f"too much CPU time: reading it took more than {settings.extract_cpu_seconds} s")
    if "MemoryError" in stderr or "bad_alloc" in stderr or "Cannot allocate memory" in stderr:
        raise Unreadable(f"too much memory: reading it needs more than "
                         f"{settings.extract_memory_bytes / 2**20:,.0f} MiB")
    if done.exit_code == VERSION_MISMATCH:
        raise sandbox.SandboxUnavailable(_last_line(done.stderr))
    if stderr.lstrip().startswith("bwrap:") or stderr.lstrip().startswith("prlimit:"):
        raise RuntimeError(f"the sandbox did not start: {_last_line(done.stderr)}")
    raise Unreadable(f"the reader stopped (exit code {done.exit_code}): {_last_line(done.stderr) or 'no message'}")
