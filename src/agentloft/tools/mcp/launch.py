"""How a stdio MCP server's process is started: in bubblewrap, as the unprivileged sandbox user.

The command is code an admin chose (often a package from a registry), so it never runs as the server's own
user, and it never sees the data directory, the server's environment or its ``/proc``. It runs as a
dedicated user of its own (``AGENTLOFT_MCP_SANDBOX_USER``), checked as the python tool checks its user
(``tools.sandbox``) but not the same one: the process limit counts per user, and a server's processes and
threads must not use up the budget of the python tool's snippets. The wrapper is ``bwrap`` (Debian's
bubblewrap): PID, IPC, UTS and network namespaces (a server that may use the network joins the one of
``tools.mcp.egress``, whose only way out is a proxy that obeys the network guard), read-only system
directories, a private, size-limited ``/tmp`` as working directory and home (the only place it can
write), ``--die-with-parent``; inside, ``setpriv`` drops to the sandbox user's uid and gid (a real host
user, not root mapped to another uid in a user namespace), with no supplementary groups and no way to gain
privileges back, and util-linux ``prlimit`` sets the limits of ``mcp_limits`` (address space, processes,
open files, file size; no CPU-time limit, which a long-lived server would reach).

Unlike a python snippet, an MCP server is long-lived and is started by the ``mcp`` SDK's stdio transport,
which takes a command line and nothing else (no user switch between fork and exec): so bubblewrap starts
as root, and the switch is the last step of the command line. That also lets the sandbox read-only bind
an interpreter the sandbox user could not reach by itself (a pyenv build under ``/root``) when the command
names it.

What the process can read: ``/usr`` (and the ``/bin``/``/lib`` links), ``/etc``, ``/opt``, this Python's
own prefixes (so a server installed next to the platform, ``python -m some_server``, runs) and the
absolute paths named in the command and its arguments (``/`` too, as a filesystem server is often given).
Never the server's private paths (``Settings.private_paths``: the data dir, the database's files, the key
file): a named path inside one is not bound, and wherever a bound tree holds one (a data dir under
``/opt``, or anywhere below a ``/`` given as an argument) it is covered after the binds
(``tools.sandbox.hiding``), so the server sees an empty directory it cannot enter.

Starting as the sandbox user needs root (to switch users) and bubblewrap. Without them a stdio server does
not start and the admin is told why; the ``mcp_stdio_sandbox`` setting can turn the sandbox off, which runs
the command as the server's own user (the README says what that means).

:class:`Launcher` is the seam: the connection manager asks one for the process to start, so another
sandbox can take this one's place without touching the MCP code.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from mcp.client.stdio import StdioServerParameters

from agentloft.core.settings import Settings
from agentloft.tools.mcp.egress import AllowListSource, Egress
from agentloft.tools.sandbox import (
    PATH_ENV,
    Limits,
    SandboxUnavailable,
    hiding,
    inside,
    prlimit_argv,
    sandbox_user,
    system_mounts,
    visible,
)

SECRET_ENV = "MCP_BEARER_TOKEN"
SYSTEM_DIRS = ("/usr", "/etc", "/opt")

__all__ = ["BwrapLauncher", "DirectLauncher", "Launcher", "SandboxUnavailable", "StdioSpec", "launcher_for"]


@dataclass(frozen=True)
class StdioSpec:
    """What an admin configured for a stdio server."""

    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    secret: str | None = None
    network: bool = False

    def environment(self) -> dict[str, str]:
        env = dict(self.env)
        if self.secret:
            env[SECRET_ENV] = self.secret
        return env


class Launcher(Protocol):
    def __call__(self, spec: StdioSpec) -> StdioServerParameters:
        """The process to start for this server (the program, its arguments, its environment)."""
        ...

    async def aclose(self) -> None:
        """Let go of what the launches share (at shutdown, after their processes ended)."""
        ...


def _named_paths(spec: StdioSpec) -> list[str]:
    """Absolute paths the command line names, as they are on disk."""
    out: list[str] = []
    for word in (spec.command, *spec.args):
        if word.startswith("/") and os.path.exists(word) and (real := os.path.realpath(word)) not in out:
            out.append(real)
    return out


def _outermost(paths: list[str]) -> list[str]:
    """The paths, less those inside another one of them (already visible through it)."""
    unique = sorted(set(paths), key=len)
    return [p for i, p in enumerate(unique) if not any(inside(p, q) for q in unique[:i])]


def _parents(paths: list[str]) -> list[str]:
    """Every directory above the paths that the system mounts do not already provide, outermost first."""
    out: set[str] = set()
    for path in paths:
        for parent in map(str, Path(path).parents):
            if parent != "/" and not any(inside(parent, d) for d in SYSTEM_DIRS):
                out.add(parent)
    return sorted(out, key=lambda p: (p.count("/"), p))


def _python_prefixes() -> list[str]:
    return sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)})


@dataclass
class BwrapLauncher:
    """Starts the command in bubblewrap as ``user`` (see the module docstring); ``private`` paths are never
    shown to it."""

    private: tuple[str, ...]
    user: str
    limits: Limits
    egress: Egress
    bwrap: str | None = field(default_factory=lambda: shutil.which("bwrap", path=PATH_ENV))
    setpriv: str | None = field(default_factory=lambda: shutil.which("setpriv", path=PATH_ENV))
    nsenter: str | None = field(default_factory=lambda: shutil.which("nsenter", path=PATH_ENV))

    def _ids(self) -> tuple[int, int]:
        if self.bwrap is None or self.setpriv is None:
            raise SandboxUnavailable(
                "stdio MCP servers run in bubblewrap as the sandbox user, and 'bwrap' or 'setpriv' is not "
                "installed (Debian: apt-get install bubblewrap util-linux)"
            )
        user = sandbox_user(self.user)  # the python tool's checks: exists, not root, this server is root
        return user.uid, user.gid

    def _mounts(self, spec: StdioSpec) -> list[str]:
        out, binds = system_mounts()
        for path in visible(SYSTEM_DIRS, self.private):
            out += ["--ro-bind-try", path, path]
            binds.append(path)
        paths = _outermost(visible([*_python_prefixes(), *_named_paths(spec)], self.private))
        # bwrap would make the missing parents of a bind target readable by root only (0700)
        for parent in _parents(paths):
            out += ["--perms", "0755", "--dir", parent]
        for path in paths:
            out += ["--ro-bind-try", path, path]
        return [*out, *hiding([*binds, *paths], self.private)]

    def argv(self, spec: StdioSpec) -> list[str]:
        uid, gid = self._ids()
        assert self.bwrap is not None and self.setpriv is not None
        namespaces = ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
        env = {"PATH": PATH_ENV, "HOME": "/tmp", "LANG": "C.UTF-8", **spec.environment()}
        joined: list[str] = []
        if spec.network:  # the proxy's settings win: set otherwise, the server could reach nothing anyway
            net = self.egress.namespace()
            joined = [self.nsenter or "nsenter", f"--net={net.path}", "--"]
            env.update(net.environment())
        else:
            namespaces.append("--unshare-net")
        # /tmp's empty tmpfs comes first: mounted after the binds, it hid a Python or a named path that
        # lives under /tmp (a checkout in /tmp, say) and the server could not start. Sticky and open to all
        # (bubblewrap, as root, would make it root's), sized, so the server can write there and no more.
        scratch = ["--perms", "1777", "--size", str(self.limits.scratch_bytes), "--tmpfs", "/tmp"]
        return [
            *joined, self.bwrap, "--die-with-parent", "--new-session", *namespaces, *scratch,
            *self._mounts(spec), "--proc", "/proc", "--dev", "/dev", "--chdir", "/tmp", "--clearenv",
            *_setenv(env.items()),
            "--", self.setpriv, f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--no-new-privs", "--",
            *prlimit_argv(self.limits), spec.command, *spec.args,
        ]

    def __call__(self, spec: StdioSpec) -> StdioServerParameters:
        argv = self.argv(spec)
        return StdioServerParameters(command=argv[0], args=argv[1:], env={})

    async def aclose(self) -> None:
        await self.egress.aclose()


def _setenv(items: Iterable[tuple[str, str]]) -> list[str]:
    out: list[str] = []
    for name, value in items:
        out += ["--setenv", name, value]
    return out


@dataclass
class DirectLauncher:
    """No sandbox: the command runs as this server's own user, with only the configured environment on
    top of the SDK's minimal default one (PATH, HOME, ...). Only when an admin turned the sandbox off."""

    def __call__(self, spec: StdioSpec) -> StdioServerParameters:
        return StdioServerParameters(command=spec.command, args=list(spec.args), env=spec.environment())

    async def aclose(self) -> None:
        return None


def mcp_limits(settings: Settings) -> Limits:
    """What each stdio server process may use (``AGENTLOFT_MCP_*``); the process count is its user's, shared
    by every server."""
    mb = 1024 * 1024
    return Limits(cpu_seconds=None, memory_bytes=settings.mcp_memory_mb * mb, processes=settings.mcp_max_processes,
                  file_bytes=settings.mcp_scratch_mb * mb, open_files=settings.mcp_max_open_files,
                  scratch_bytes=settings.mcp_scratch_mb * mb)


def launcher_for(settings: Settings, allow_list: AllowListSource) -> Launcher:
    """The launcher ``settings`` ask for; ``allow_list`` is what networked servers may reach inside."""
    if not settings.mcp_stdio_sandbox:
        return DirectLauncher()
    return BwrapLauncher(private=tuple(map(str, settings.private_paths())), user=settings.mcp_sandbox_user,
                         limits=mcp_limits(settings), egress=Egress(allow_list))
