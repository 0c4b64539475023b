"""Run an untrusted program confined by the operating system: bubblewrap namespaces, a dedicated
unprivileged host user, resource limits and a wall-clock limit.

An in-process guard (an audit hook, a patched ``os``) is not a boundary: the confined code can overwrite
whatever the interpreter installed before it. So the boundary is the kernel's:

- **Namespaces** (``bwrap --unshare-all``): new PID, network, IPC, UTS, mount and user namespaces. The
  program sees read-only system directories (``/usr`` and the merged-``/usr`` links, plus any extra
  read-only paths the caller names, e.g. the interpreter's prefix), a fresh ``/proc`` that lists only its
  own processes, a minimal ``/dev``, and two private, size-limited tmpfs: ``/tmp`` and the working
  directory ``/scratch``. The server's private paths (``Settings.private_paths``: the data dir, the
  database's files, the key file) are covered wherever a bound tree holds them (:func:`hiding`): a data
  dir under ``/usr`` or under the interpreter's prefix shows up empty and locked. No ``/etc``, no home
  directories, no server environment
  (``--clearenv``), no network (an empty namespace with only loopback), no nested user namespaces
  (``--disable-userns``). The program is the namespace's first process (``--as-pid-1``): when it ends,
  the kernel kills and reaps everything else inside, whatever it did to its process group, and bwrap
  reaps it before exiting, so no process of the sandbox user outlives a run (not even a zombie, which
  would count against its process limit). ``--die-with-parent`` covers a server that dies.
- **A dedicated host user** (``AGENTLOFT_PYTHON_SANDBOX_USER``, no supplementary groups): not root, and
  not root mapped to another uid inside a user namespace, so the host enforces the rlimits (root ignores
  ``RLIMIT_NPROC``) and ordinary file permissions. ``RLIMIT_NPROC`` counts processes per real uid, so
  this uid must run nothing else; concurrent runs share its process budget.
- **Resource limits**, set by util-linux ``prlimit`` on its way to ``bwrap`` (not with ``preexec_fn``,
  which can deadlock a threaded server between fork and exec): CPU seconds, address space, processes,
  file size, open files, no POSIX message queues, no core dumps. The tmpfs sizes bound what the program
  can store.
- **A run's memory in total.** Where no per-run cgroup can be had (a host whose cgroup v2 tree offers no
  delegated memory controller, as the machines this was written on: cgroup v1 memory, owned by the host),
  the bound is a budget, :meth:`Limits.budget_bytes`: ``processes`` × the address-space limit, plus the
  three tmpfs (``/tmp``, ``/scratch``, ``/dev/shm``, each ``scratch_bytes``). For it to hold, nothing a
  run can fill may sit outside those: bubblewrap's root tmpfs and its ``/dev`` had no size (2 GB written
  into ``/`` in 2.2 s), so both are remounted read-only and ``/dev/shm`` is a sized tmpfs; System V shared
  memory lives on after its last process detaches it, outside every address space (2 GB from one process
  limited to 256 MB), and ``memfd_create`` files count against no address space either, so a seccomp
  filter (:func:`seccomp_filter`) refuses ``shmget`` and ``memfd_create`` with ``EPERM``. Left outside
  the budget: the kernel's own buffers (pipes, sockets), a few hundred kilobytes per open file at most.
  ``RLIMIT_NPROC`` is counted per user, so runs at the same time share one budget of processes.

The server switches to the sandbox user at the head of the command line: util-linux ``setpriv`` sets the
real and effective uid and gid and clears the supplementary groups, then execs ``prlimit``. Not with
``subprocess``'s ``user``/``group``/``extra_groups``: uvloop, the event loop ``agentloft serve`` runs on
(uvicorn's default when it is installed, as ``uvicorn[standard]`` does), refuses those arguments, so every
snippet failed there. The switch needs root; a server running as an ordinary user cannot, and the
sandbox is then unavailable (``SandboxUnavailable`` says why) rather than quietly weaker. ``bwrap`` itself
runs as the sandbox user, so the kernel must let unprivileged users create user namespaces (Debian does;
a container needs its runtime to allow it).

``run_unconfined`` is the explicit, unsafe fallback an admin may opt into: limits and a clean
environment only, as the server's own user.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import functools
import os
import pwd
import re
import shutil
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

SCRATCH = "/scratch"
PATH_ENV = "/usr/local/bin:/usr/bin:/bin"
# Top-level system paths a Debian-style root has; links are recreated as links, directories bound read-only.
SYSTEM_ROOTS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
SIZED_TMPFS = ("/tmp", SCRATCH, "/dev/shm")  # what a run may write, each ``Limits.scratch_bytes``
# Calls that make memory no address-space limit counts (see the module docstring).
REFUSED_CALLS = ("shmget", "memfd_create")


class SandboxUnavailable(RuntimeError):
    """This host cannot run the sandbox; the message says why and what would fix it."""


@dataclass(frozen=True)
class Limits:
    """What one run may use. ``processes`` counts every process and thread of the sandbox user;
    ``memory_bytes`` is each process's address space."""

    cpu_seconds: int | None  # None: no limit (a long-lived server would reach any)
    memory_bytes: int
    processes: int
    file_bytes: int
    open_files: int
    scratch_bytes: int

    @property
    def budget_bytes(self) -> int:
        """The most memory a run can hold at once (see the module docstring): every process at its
        address-space limit, and the three tmpfs full."""
        return self.processes * self.memory_bytes + len(SIZED_TMPFS) * self.scratch_bytes


@dataclass(frozen=True)
class SandboxUser:
    name: str
    uid: int
    gid: int


@dataclass(frozen=True)
class Completed:
    """How a run ended. When signal n ended the program, ``exit_code`` is 128 + n in the sandbox (bwrap
    reports it so) and -n unconfined."""

    exit_code: int | None
    stdout: bytes
    stderr: bytes
    stdout_cut: bool
    stderr_cut: bool
    timed_out: bool


@functools.cache
def seccomp_filter() -> bytes:
    """The BPF program bwrap loads (``--seccomp``): every call allowed but ``REFUSED_CALLS``, which fail
    with ``EPERM``; another architecture's calls (an i386 or x32 entry into a 64-bit kernel) kill the
    caller, as libseccomp does by default, so they cannot go around the numbers checked."""
    try:
        import pyseccomp
    except RuntimeError as exc:  # raised on import when the shared library is missing
        raise SandboxUnavailable(f"{exc} (Debian: apt-get install libseccomp2)") from None
    rules = pyseccomp.SyscallFilter(pyseccomp.ALLOW)
    for call in REFUSED_CALLS:
        rules.add_rule(pyseccomp.ERRNO(errno.EPERM), call)
    with tempfile.TemporaryFile() as out:
        rules.export_bpf(out)
        out.seek(0)
        return out.read()


def sandbox_user(name: str) -> SandboxUser:
    """The sandbox user, after the checks that need no process: or ``SandboxUnavailable`` with the reason."""
    if not sys.platform.startswith("linux"):
        raise SandboxUnavailable(f"the sandbox needs Linux namespaces; this host runs {sys.platform}")
    for program in ("bwrap", "prlimit", "setpriv"):
        if not shutil.which(program, path=PATH_ENV):
            package = "bubblewrap" if program == "bwrap" else "util-linux"
            raise SandboxUnavailable(f"{program} is not installed (Debian: apt-get install {package})")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise SandboxUnavailable(
            f"the sandbox user {name!r} does not exist (create it as root: useradd --system --user-group "
            f"--no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin {name})"
        ) from None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise SandboxUnavailable(f"the sandbox user {name!r} must not be root or in group root")
    if os.geteuid() != 0:
        raise SandboxUnavailable(
            f"the server runs as uid {os.geteuid()}, not root, so it cannot start programs as {name!r}; "
            "run the server as root (it switches to the sandbox user for each run)"
        )
    return SandboxUser(name=name, uid=entry.pw_uid, gid=entry.pw_gid)


SYSTEM_INTERPRETERS = ("/usr/bin/python3", "/usr/local/bin/python3")


def interpreter() -> tuple[str, list[str]]:
    """The interpreter sandboxed Python runs on (the python tool's snippets, document extraction), and the
    directories outside ``/usr`` it needs to read.

    The server's own base interpreter (never a virtualenv's, whose packages are the server's) when it lives
    under ``/usr``; else the system's ``python3``, because the sandbox user usually cannot read an
    interpreter installed in a home directory (pyenv); else the server's base interpreter and its prefix."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    base = Path(sys.base_prefix) / "bin" / version
    own = str(base) if base.exists() else os.path.realpath(sys.executable)
    if own.startswith("/usr/"):
        return own, []
    for candidate in SYSTEM_INTERPRETERS:
        if os.path.exists(candidate):
            return candidate, []
    return own, sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.base_exec_prefix)})


_working: set[tuple[SandboxUser, tuple[str, ...]]] = set()


async def ensure_sandbox(name: str, probe: Sequence[str], read_only: Sequence[str] = (),
                         as_root: bool = False) -> SandboxUser:
    """The sandbox user once ``probe`` (a command that should exit 0) ran inside the sandbox.

    Success is remembered for the process's life; a failure is checked again on the next call, so fixing
    the host (installing bwrap, creating the user) needs no restart."""
    user = sandbox_user(name)
    seccomp_filter()  # its library is missing: said before anything runs
    key = (user, (*probe, "\0", *read_only, "\0", str(as_root)))
    if key in _working:
        return user
    limits = Limits(cpu_seconds=5, memory_bytes=512 << 20, processes=16, file_bytes=1 << 20, open_files=64,
                    scratch_bytes=1 << 20)
    done = await run_confined(probe, user=user, limits=limits, wall_seconds=10, output_cap=4096, read_only=read_only,
                              as_root=as_root)
    if done.exit_code != 0:
        why = done.stderr.decode("utf-8", "replace").strip() or f"exit code {done.exit_code}"
        raise SandboxUnavailable(
            f"bubblewrap could not start a sandbox as {name!r}: {why} (the kernel must allow unprivileged "
            "user namespaces; in a container, the runtime must permit them)"
        )
    _working.add(key)
    return user


def inside(path: str, root: str) -> bool:
    """``path`` is ``root`` or lies below it (both absolute and normalised)."""
    return path == root or path.startswith(root.rstrip("/") + "/")


def _existing(private: Iterable[str]) -> list[str]:
    """The private paths that exist, resolved, less those inside another one (hidden with it)."""
    real = sorted({os.path.realpath(p) for p in private if os.path.lexists(p)}, key=len)
    return [p for i, p in enumerate(real) if not any(inside(p, q) for q in real[:i])]


def visible(binds: Iterable[str], private: Iterable[str]) -> list[str]:
    """The paths to bind, less any that is (or lies inside) a private path: binding it would show it."""
    hidden = _existing(private)
    return [b for b in binds if not any(inside(os.path.realpath(b), p) for p in hidden)]


def hiding(binds: Iterable[str], private: Iterable[str]) -> list[str]:
    """bwrap options that cover each private path wherever one of ``binds`` (bound at its own path) shows it.

    They must come after the binds: bwrap mounts in order, and a mount over a path hides what an earlier
    one showed there. A directory gets an empty tmpfs that only root may enter, made read-only so nobody
    can change that; a file gets ``/dev/null`` (which cannot even be opened there: bwrap binds ``nodev``).
    A private path that does not exist yet cannot be covered (bwrap would have to create its mount point
    in a read-only tree); the owner-only modes every start sets (``Settings.prepare_data_dir``) keep such
    a file, a WAL that SQLite creates later, unreadable."""
    roots = [(b, os.path.realpath(b)) for b in dict.fromkeys(binds)]
    out: list[str] = []
    shown: set[str] = set()
    for secret in _existing(private):
        for root, real_root in roots:
            if not inside(secret, real_root):
                continue
            path = os.path.normpath(os.path.join(root, os.path.relpath(secret, real_root)))
            if path in shown:
                continue
            shown.add(path)
            if os.path.isdir(secret):
                out += ["--perms", "0000", "--size", "4096", "--tmpfs", path, "--remount-ro", path]
            else:
                out += ["--ro-bind", "/dev/null", path]
    return out


def prlimit_argv(limits: Limits) -> list[str]:
    """``prlimit <limits> --``: sets the limits on itself, then execs what follows with them."""
    cpu = [] if limits.cpu_seconds is None else [f"--cpu={limits.cpu_seconds}:{limits.cpu_seconds + 1}"]
    return [
        "prlimit", *cpu, f"--as={limits.memory_bytes}",
        f"--nproc={limits.processes}", f"--fsize={limits.file_bytes}", f"--nofile={limits.open_files}",
        "--msgqueue=0", "--core=0", "--",
    ]


def setpriv_argv(user: SandboxUser) -> list[str]:
    """``setpriv <user> --``: becomes ``user`` (uid, gid, no supplementary groups), then execs what follows."""
    return ["setpriv", f"--reuid={user.uid}", f"--regid={user.gid}", "--clear-groups", "--"]


def system_mounts() -> tuple[list[str], list[str]]:
    """bwrap options for the system roots (``/bin``, ``/lib``...: links recreated as links, directories
    bound read-only), and the directories among them that they bind."""
    options: list[str] = []
    binds: list[str] = []
    for root in SYSTEM_ROOTS:
        if os.path.islink(root):
            options += ["--symlink", os.readlink(root), root]
        elif os.path.isdir(root):
            options += ["--ro-bind", root, root]
            binds.append(root)
    return options, binds


def _parent_dirs(paths: Iterable[str]) -> list[str]:
    """bwrap options making every directory above ``paths`` (outside ``/usr``) traversable: bubblewrap started
    as root makes the missing parents of a bind target root's own, mode 0700."""
    parents = {str(p) for path in paths for p in Path(path).parents if str(p) != "/" and not inside(str(p), "/usr")}
    out: list[str] = []
    for parent in sorted(parents, key=lambda p: (p.count("/"), p)):
        out += ["--perms", "0755", "--dir", parent]
    return out


def bwrap_argv(command: Sequence[str], user: SandboxUser, limits: Limits, read_only: Sequence[str],
               info_fd: int, private: Sequence[str] = (), seccomp_fd: int | None = None,
               as_root: bool = False) -> list[str]:
    """``setpriv ... -- prlimit ... -- bwrap ... -- command``: the whole confinement as one command line.

    ``as_root``: ``bwrap ... -- setpriv ... -- prlimit ... -- command`` instead, for a run that must read
    paths the sandbox user cannot reach by itself (a server installed under ``/root``, whose packages the
    document reader needs): bubblewrap binds them as root, without a user namespace (a uid switched to
    inside one would be unmapped), and the switch to the sandbox user and its limits are the last steps,
    so the user's process limit holds as before. The sandbox user could then create a user namespace of
    its own (``--disable-userns`` needs bubblewrap's); in it, it still sees only this sandbox's mounts and
    no network."""
    roots, binds = system_mounts()
    mounts = ["--ro-bind", "/usr", "/usr", *roots]
    binds.append("/usr")
    extra = [path for path in visible(read_only, private) if not inside(path, "/usr")]
    if as_root:
        mounts += _parent_dirs(extra)
    for path in extra:
        mounts += ["--ro-bind", path, path]
        binds.append(path)
    mounts += hiding(binds, private)
    size = str(limits.scratch_bytes)
    seccomp = [] if seccomp_fd is None else ["--seccomp", str(seccomp_fd)]
    # as root, a tmpfs would be root's own: open to all and sticky, as /tmp is, so the user can write in it
    tmpfs = ["--perms", "1777", "--size", size, "--tmpfs"] if as_root else ["--size", size, "--tmpfs"]
    if as_root:
        head: list[str] = []
        namespaces = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-net", "--unshare-cgroup-try"]
        tail = [*setpriv_argv(user)[:-1], "--no-new-privs", "--", *prlimit_argv(limits)]
    else:
        head = [*setpriv_argv(user), *prlimit_argv(limits)]
        namespaces = ["--unshare-all", "--unshare-user", "--disable-userns"]
        tail = []
    return [
        *head,
        "bwrap", *namespaces, "--as-pid-1", "--die-with-parent",
        "--new-session", "--info-fd", str(info_fd), "--hostname", "sandbox", *seccomp,
        *tmpfs, "/tmp",  # before the binds, so one under the host's /tmp stays visible
        *mounts, "--proc", "/proc", "--dev", "/dev", *tmpfs, "/dev/shm",
        "--remount-ro", "/dev",  # not recursive: /dev/shm and /dev/pts stay as they are
        *tmpfs, SCRATCH,
        "--remount-ro", "/",  # last: every mount point above is made in the root tmpfs
        "--chdir", SCRATCH,
        "--clearenv", "--setenv", "PATH", PATH_ENV, "--setenv", "HOME", SCRATCH, "--setenv", "TMPDIR", "/tmp",
        "--setenv", "LANG", "C.UTF-8", "--", *tail, *command,
    ]


async def run_confined(command: Sequence[str], *, user: SandboxUser, limits: Limits, wall_seconds: float,
                       output_cap: int, stdin: bytes = b"", pass_fds: Sequence[int] = (),
                       read_only: Sequence[str] = (), private: Sequence[str] = (), as_root: bool = False) -> Completed:
    """Run ``command`` in the sandbox as ``user``; ``pass_fds`` stay open for it (e.g. a memfd with input);
    ``private`` paths stay hidden even where ``read_only`` (or ``/usr``) holds them; ``as_root``: see
    :func:`bwrap_argv`."""
    info_read, info_write = os.pipe()  # bwrap reports the host pid of the sandbox's first process here
    os.set_blocking(info_read, False)
    rules = _readable(seccomp_filter())
    try:
        argv = bwrap_argv(command, user, limits, read_only, info_fd=info_write, private=private, seccomp_fd=rules,
                          as_root=as_root)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, cwd="/", env={"PATH": PATH_ENV}, start_new_session=True,
                pass_fds=(*pass_fds, info_write, rules),
            )
        finally:
            os.close(info_write)
            os.close(rules)
        return await _supervise(proc, stdin, wall_seconds, output_cap, lambda: _stop_sandbox(proc, info_read))
    finally:
        os.close(info_read)


def _readable(data: bytes) -> int:
    """A pipe's read end that yields ``data`` and then ends (``data`` fits the pipe's buffer)."""
    read, write = os.pipe()
    try:
        os.write(write, data)
    finally:
        os.close(write)
    return read


async def run_unconfined(command: Sequence[str], *, limits: Limits, wall_seconds: float, output_cap: int,
                         stdin: bytes = b"", pass_fds: Sequence[int] = ()) -> Completed:
    """UNSAFE: ``command`` as the server's own user, with the same limits, a clean environment and a
    temporary working directory, but nothing hidden from it (files, network, processes)."""
    scratch = tempfile.mkdtemp(prefix="agentloft-unconfined-")
    env = {"PATH": PATH_ENV, "HOME": scratch, "TMPDIR": scratch, "LANG": "C.UTF-8"}
    try:
        proc = await asyncio.create_subprocess_exec(
            *prlimit_argv(limits), *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE, cwd=scratch, env=env, start_new_session=True, pass_fds=tuple(pass_fds),
        )
        return await _supervise(proc, stdin, wall_seconds, output_cap, lambda: _stop_group(proc))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


async def _supervise(proc: asyncio.subprocess.Process, stdin: bytes, wall_seconds: float, cap: int,
                     stop: Callable[[], Awaitable[None]]) -> Completed:
    """Feed stdin, read both outputs up to ``cap`` bytes, and ``stop`` everything once ``wall_seconds``
    pass or the caller is cancelled."""
    assert proc.stdout is not None and proc.stderr is not None
    readers = asyncio.ensure_future(asyncio.gather(_read_capped(proc.stdout, cap), _read_capped(proc.stderr, cap)))
    timed_out = False
    try:
        async with asyncio.timeout(wall_seconds):
            await _feed(proc, stdin)
            await asyncio.shield(readers)
            await proc.wait()
    except TimeoutError:
        timed_out = True
    finally:
        if proc.returncode is None:
            await stop()
    (out, out_cut), (err, err_cut) = await readers
    return Completed(proc.returncode, out, err, out_cut, err_cut, timed_out)


async def _stop_group(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    await proc.wait()


async def _stop_sandbox(proc: asyncio.subprocess.Process, info: int) -> None:
    """Kill the sandbox's first process (and with it its PID namespace), then let bwrap reap it and exit.

    Killing bwrap first would orphan that process: its zombie, owned by the sandbox user and counted against
    the user's process limit, would wait for the host's init to reap it, which some container inits never
    do. bwrap itself is killed only when it does not exit on its own (e.g. still setting up)."""
    pid = _sandbox_pid(info)
    if pid is not None:
        _kill_child(pid, parent=proc.pid)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), 2)
    await _stop_group(proc)


def _sandbox_pid(info: int) -> int | None:
    """The ``child-pid`` bwrap wrote to its info pipe, if it got that far."""
    raw = b""
    with contextlib.suppress(OSError):  # BlockingIOError: nothing (more) written yet
        while chunk := os.read(info, 4096):
            raw += chunk
    found = re.search(rb'"child-pid"\s*:\s*(\d+)', raw)
    return int(found.group(1)) if found else None


def _kill_child(pid: int, parent: int) -> None:
    """SIGKILL ``pid`` if it is still ``parent``'s child; the pidfd makes the check and the signal concern
    the same process even if the pid were reused in between."""
    try:
        handle = os.pidfd_open(pid)
    except OSError:
        return
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            signal.pidfd_send_signal(handle, signal.SIGKILL)
    except (OSError, ValueError, IndexError):
        pass
    finally:
        os.close(handle)


async def _read_capped(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, bool]:
    kept = bytearray()
    dropped = False
    while chunk := await stream.read(65536):
        room = limit - len(kept)
        if room > 0:
            kept.extend(chunk[:room])
        if len(chunk) > max(room, 0):
            dropped = True
    return bytes(kept), dropped


async def _feed(proc: asyncio.subprocess.Process, stdin: bytes) -> None:
    assert proc.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        if stdin:
            proc.stdin.write(stdin)
            await proc.stdin.drain()
        proc.stdin.close()

