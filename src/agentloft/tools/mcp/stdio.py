"""The stdio transport: a server's process spoken to in newline-delimited JSON-RPC on its stdin and stdout,
each message it sends read in time linear in its length and at most ``max_bytes`` long.

Why not the SDK's ``stdio_client``: its reader (mcp 2.3) joins everything it holds of an unfinished line
with each read of at most 64 KB and splits the whole again, so a line of n bytes costs about n²/64 KB of
copying, on the event loop: one 32 MiB answer took 8-10 s of this process's CPU (``python -m bench.mcp
--long``, docs/benchmarks.md), and a line of any length was taken into memory. This transport is built
from the SDK's public pieces (``StdioServerParameters``, ``get_default_environment``, its shutdown
timeouts, ``terminate_posix_process_tree``) and anyio's process, and otherwise does what the SDK's does:
the server runs in a session of its own; shutting down closes its stdin, gives it
``PROCESS_TERMINATION_TIMEOUT`` to exit, then terminates its whole process group; while shutting down
its stdout is drained, so a server blocked writing can still exit; a closed stdout ends the read stream,
which is how a dead process is noticed (``connections._WatchedReads``).

Bytes are read as UTF-8 that keeps a byte UTF-8 does not allow as a lone surrogate (``surrogateescape``),
so such an answer fails its own call with a message saying so (``repair.not_utf8``) rather than the
reader. A line that is not JSON-RPC (a banner a server prints first) reaches the session as the parse
error it is, which the session passes over.

A message longer than ``max_bytes`` (``AGENTLOFT_MCP_MAX_MESSAGE_BYTES``) is never held whole:

- when its first bytes say which call it answers (``{"jsonrpc": "2.0", "id": 7, "result": …``, the order
  the Python SDK and most others write), that call fails at once, with an error saying the answer was too
  long; the rest of the line is read and dropped, and the server's other calls go on;
- otherwise (another order, or a request or notification of the server's) the connection ends, and every
  call waiting on it fails with that reason (:attr:`StdioTransport.failure`); the next call starts the
  server again.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import IO

import anyio
import mcp_types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import (
    FORCE_KILL_TIMEOUT,
    PROCESS_TERMINATION_TIMEOUT,
    StdioServerParameters,
    get_default_environment,
)
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage

log = logging.getLogger(__name__)

# The ``data`` of the error answer given in the server's stead for an answer that was too long: the
# failure is then told in its own words (``connections.describe``), not as an error the server sent.
TOO_LONG = "agentloft:too-long"
HEAD_BYTES = 512  # what is kept of a line that is too long, to find which call it answers
WRITER_FLUSH_S = 0.5  # for the writer to send what it took before stdin closes
KILL_REAP_S = 2.0  # for the loop to see a killed process gone
EXIT_POLL_S = 0.01

_JSONRPC = rb'"jsonrpc"\s*:\s*"2\.0"\s*,\s*'
# The start of an answer: the version (before or after the id), the id, then the result or the error.
_ANSWER_HEAD = re.compile(
    rb'\A\s*\{\s*(?:' + _JSONRPC + rb')?"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")\s*,\s*(?:' + _JSONRPC
    + rb')?"(?:result|error)"\s*:'
)

Reads = MemoryObjectReceiveStream[SessionMessage | Exception]
Writes = MemoryObjectSendStream[SessionMessage]


@dataclass(frozen=True)
class TooLong:
    """A line that was longer than allowed: its first bytes (the rest was dropped)."""

    head: bytes


class LineReader:
    """Cuts a byte stream into lines of at most ``max_bytes`` each; every byte is looked at once and a
    line is joined once, so the work is linear in what is read, and memory stays within ``max_bytes``
    plus one read."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._parts: list[bytes] = []
        self._size = 0
        self._dropping = False  # inside a line that was too long: its rest is skipped

    def feed(self, chunk: bytes) -> Iterator[bytes | TooLong]:
        """The lines ``chunk`` completes (without their newline), and a :class:`TooLong` as soon as the
        line being read passes the limit."""
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if not self._dropping:
                if self._size + len(piece) > self.max_bytes:
                    yield TooLong(self._head(piece))
                    self._parts, self._size, self._dropping = [], 0, True
                else:
                    self._parts.append(piece)
                    self._size += len(piece)
            if end < 0:
                return
            if not self._dropping:
                yield b"".join(self._parts)
            self._parts, self._size, self._dropping = [], 0, False
            start = end + 1

    def _head(self, last: bytes) -> bytes:
        head = b""
        for part in (*self._parts, last):
            head += part[: HEAD_BYTES - len(head)]
            if len(head) >= HEAD_BYTES:
                break
        return head


def too_long(max_bytes: int) -> str:
    """Why an answer longer than allowed was not used (said of stdio and HTTP answers alike)."""
    return (f"its answer was longer than the {max_bytes:,} bytes one message may have "
            "(AGENTLOFT_MCP_MAX_MESSAGE_BYTES), so it was not used")


def too_long_answer(head: bytes, max_bytes: int) -> SessionMessage | None:
    """For a line too long whose start shows it answers a call: an error answer to that call saying so.
    None when its start does not say (the connection then ends)."""
    match = _ANSWER_HEAD.match(head)
    if match is None:
        return None
    try:
        request_id = json.loads(match.group(1))
    except ValueError:
        return None
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(
        code=types.INTERNAL_ERROR, message=too_long(max_bytes), data=TOO_LONG)))


def _parsed(line: bytes) -> SessionMessage | Exception:
    text = line.decode("utf-8", "surrogateescape")
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(text, by_name=False))
    except ValueError as exc:  # not JSON-RPC: the session passes it over (``_WatchedReads`` may repair it)
        log.debug("an MCP server's stdout line is not a JSON-RPC message: %.200s", text)
        return exc


class StdioTransport:
    """One server process for one connection (:meth:`open`); :attr:`failure` says why this transport
    ended the connection itself, when it did."""

    def __init__(self, params: StdioServerParameters, *, errlog: IO[str], max_bytes: int) -> None:
        self.params = params
        self.errlog = errlog
        self.max_bytes = max_bytes
        self.failure: str | None = None

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Reads, Writes]]:
        params = self.params
        process = await anyio.open_process(
            [params.command, *params.args], env=get_default_environment() | (params.env or {}),
            stderr=self.errlog, cwd=params.cwd, start_new_session=True,
        )
        # No awaits until the task group is entered: a cancellation in between would leave the process.
        to_session, reads = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        writes, to_server = anyio.create_memory_object_stream[SessionMessage](0)
        writer_done = anyio.Event()
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._read, process, to_session)
            tg.start_soon(self._write, process, to_server, to_session, writer_done)
            try:
                yield reads, writes
            finally:
                with anyio.CancelScope(shield=True):  # every wait inside is bounded
                    reads.close()  # the reader stops delivering and drains stdout
                    writes.close()
                    with anyio.move_on_after(WRITER_FLUSH_S):
                        await writer_done.wait()
                    await _stop(process)
                    for stream in (reads, writes, to_session, to_server):
                        await stream.aclose()
                tg.cancel_scope.cancel()

    async def _read(self, process: Process, to_session: MemoryObjectSendStream[SessionMessage | Exception]) -> None:
        assert process.stdout is not None
        lines = LineReader(self.max_bytes)
        try:
            async with to_session:
                async for chunk in process.stdout:
                    for line in lines.feed(chunk):
                        if isinstance(line, bytes) and not line.strip():
                            continue
                        item = self._item(line)
                        if item is None:
                            return  # closing the stream ends the session: the reason is in ``failure``
                        await to_session.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, ConnectionError, OSError):
            pass  # the session is gone, or shutting down closed stdout under the read
        finally:
            await _drain(process)

    def _item(self, line: bytes | TooLong) -> SessionMessage | Exception | None:
        """What the session gets for a line: a message or a parse error; None when the connection must
        end."""
        if isinstance(line, TooLong):
            answer = too_long_answer(line.head, self.max_bytes)
            if answer is None:
                self.failure = (f"it sent a message longer than the {self.max_bytes:,} bytes one message may "
                                "have (AGENTLOFT_MCP_MAX_MESSAGE_BYTES), so its connection was closed")
            return answer
        return _parsed(line)

    async def _write(
        self, process: Process, to_server: MemoryObjectReceiveStream[SessionMessage],
        to_session: MemoryObjectSendStream[SessionMessage | Exception], done: anyio.Event,
    ) -> None:
        assert process.stdin is not None
        try:
            async with to_server:
                async for message in to_server:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send((data + "\n").encode())
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            # The process may still run but cannot be written to: end the session rather than let a
            # call wait for an answer to what was never sent.
            await to_session.aclose()
        finally:
            done.set()


async def _drain(process: Process) -> None:
    """Read and drop the rest of stdout until it closes, so a server flushing its output does not block
    on a full pipe and miss its chance to exit (shielded; shutting down closes the pipe)."""
    assert process.stdout is not None
    with anyio.CancelScope(shield=True), suppress(
        anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError
    ):
        while True:
            await process.stdout.receive()


async def _exited(process: Process, timeout_s: float) -> bool:
    """Whether the process ended within ``timeout_s``. Not ``process.wait()``: that also waits for the
    pipes to close, which a child that inherited them holds open."""
    with anyio.move_on_after(timeout_s):
        while process.returncode is None:  # noqa: ASYNC110 (nothing signals an exit short of ``wait()``)
            await anyio.sleep(EXIT_POLL_S)
        return True
    return False


async def _stop(process: Process) -> None:
    """Close stdin, wait a little, then terminate the whole process group (the MCP shutdown sequence)."""
    assert process.stdin is not None and process.stdout is not None
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdin.aclose()
    if not await _exited(process, PROCESS_TERMINATION_TIMEOUT):
        await terminate_posix_process_tree(process, FORCE_KILL_TIMEOUT)
        if not await _exited(process, KILL_REAP_S):
            log.warning("MCP server process %d is still alive after it was killed; left behind", process.pid)
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await process.stdout.aclose()
