"""What some MCP servers send and the SDK cannot read, made readable: half a UTF-16 surrogate pair.

A server written in JavaScript that cuts a string in the middle of an emoji sends ``"\\ud83d"`` in its
JSON (``JSON.stringify`` escapes the lone half). Python's ``json`` would take it; the SDK parses messages
with Pydantic, which refuses it, and then the whole answer is lost: over HTTP the call fails with "Failed
to parse JSON response", over stdio the answer is dropped and the call waits for its time limit. The
text is fine apart from that one character, so each lone surrogate escape becomes ``\\ufffd`` (the
replacement character, what a UTF-8 decoder makes of a broken sequence) before the SDK reads the message,
and a body that is not valid UTF-8 is decoded with the same replacement.

- HTTP: :class:`RepairingTransport` wraps the transport of the client the SDK is given, so every answer
  (JSON or an SSE stream, in any number of pieces) is repaired on the way in.
- stdio: the SDK hands a line it could not parse to the session as an exception that carries the line
  (Pydantic's error keeps its input); :func:`reparse` repairs that line and parses it again.

A stdio server that writes bytes that are not UTF-8 at all (text in its locale's 8-bit encoding, say) is
another matter. With strict decoding a reader dies on the first such byte: the call waits for its time
limit and the server is dead for every other call until its connection is dropped; with "replace" the
damaged answer would pass as whole. So the stdio transport (``tools.mcp.stdio``) decodes each line as
UTF-8 that keeps each stray byte as a lone surrogate (Python's ``surrogateescape``), and :func:`not_utf8`
answers the call such a line was for with an error that says so; the connection and the server's other
calls go on. (Over HTTP the body is decoded with replacement, as above: an HTTP server says which charset
it sends, a stdio server has no way to.)
"""

from __future__ import annotations

import codecs
import re
from collections.abc import AsyncIterator, Callable

import httpx2
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

# One JSON escape at a time, left to right, so ``\\`` is never read as the start of another escape:
# a well-formed surrogate pair, a lone surrogate, or any other escape.
_ESCAPES = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}|\\.", re.S
)
LONE = len(r"\ud800")
REPLACEMENT = r"\ufffd"


def _fix(match: re.Match[str]) -> str:
    escape = match.group(0)
    return REPLACEMENT if len(escape) == LONE and escape[1] == "u" else escape


def repair(text: str) -> str:
    """``text`` (JSON) with every lone surrogate escape replaced by ``\\ufffd``."""
    return _ESCAPES.sub(_fix, text) if "\\" in text else text


def _is_high(escape: str) -> bool:
    return len(escape) == LONE and escape[1] == "u" and escape[2] in "dD" and escape[3] in "89abAB"


def _open_from(text: str) -> int:
    """Where an escape that the next piece may still complete starts (``len(text)`` when none does): a
    trailing backslash, a ``\\u`` short of its four digits, or a high surrogate at the very end (its low
    half may follow), together with a high surrogate just before the unfinished escape."""
    prev: re.Match[str] | None = None
    last: re.Match[str] | None = None
    for match in _ESCAPES.finditer(text):
        prev, last = last, match
    done = last.end() if last else 0
    if text.endswith("\\", done):  # a lone backslash at the end: ``\\.`` found nothing to pair it with
        start, before = len(text) - 1, last
    elif last is not None and last.group(0) == "\\u" and last.start() + LONE > len(text):
        start, before = last.start(), prev
    elif last is not None and _is_high(last.group(0)) and last.end() == len(text):
        return last.start()
    else:
        return len(text)
    if before is not None and _is_high(before.group(0)) and before.end() == start:
        return before.start()
    return start


def _split(text: str) -> tuple[str, str]:
    """(the repaired part of ``text`` that no later piece can change, the rest to keep for later). Only an
    unfinished escape at the very end is kept back, so a streamed event goes on at once."""
    cut = _open_from(text)
    return repair(text[:cut]), text[cut:]


BodyFailed = Callable[[Exception], None]


class _RepairedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, on_error: BodyFailed | None) -> None:
        self._inner = inner
        self._on_error = on_error

    async def __aiter__(self) -> AsyncIterator[bytes]:
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        pending = ""
        try:
            async for chunk in self._inner:
                done, pending = _split(pending + decoder.decode(chunk))
                if done:
                    yield done.encode()
        except Exception as exc:
            if self._on_error is not None:
                self._on_error(exc)
            raise
        rest = repair(pending + decoder.decode(b"", final=True))
        if rest:
            yield rest.encode()

    async def aclose(self) -> None:
        await self._inner.aclose()


class RepairingTransport(httpx2.AsyncBaseTransport):
    """Wraps a transport so that every response body is repaired (see the module docstring). ``on_error``
    hears of a body that failed while it was read (the SDK then says only that the connection closed)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, on_error: BodyFailed | None = None) -> None:
        self._inner = inner
        self._on_error = on_error

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        stream = response.stream
        if not isinstance(stream, httpx2.AsyncByteStream):  # an in-memory body (a test's mock transport)
            return response
        return httpx2.Response(response.status_code, headers=response.headers, extensions=response.extensions,
                               stream=_RepairedStream(stream, self._on_error))

    async def aclose(self) -> None:
        await self._inner.aclose()


# --- stdio bytes that are not UTF-8 -------------------------------------------------------------------

# The ``data`` of the error answer :func:`not_utf8` gives in the server's stead: the failure is then told in
# its own words (``connections.describe``), not as an error the server answered with.
NOT_UTF8 = "agentloft:not-utf8"
# What ``surrogateescape`` makes of the bytes 0x80-0xFF that are not part of valid UTF-8.
_STRAY = re.compile("[\udc80-\udcff]")


def _unreadable_line(error: Exception) -> str | None:
    """The stdio line behind the SDK's failure to read it as text (Pydantic keeps its input)."""
    if not isinstance(error, ValidationError):
        return None
    details = error.errors()
    line = details[0].get("input") if details and details[0]["type"] == "string_unicode" else None
    return line if isinstance(line, str) else None


def not_utf8(error: Exception) -> SessionMessage | None:
    """For a stdio line with bytes that are not UTF-8 and that answers a call: an error answer to that
    call saying so. None for anything else (a line that answers nothing is passed over, as unreadable
    lines are)."""
    line = _unreadable_line(error)
    stray = [ord(c) - 0xDC00 for c in _STRAY.findall(line or "")]
    if line is None or not stray:
        return None
    try:
        message = types.jsonrpc_message_adapter.validate_json(_STRAY.sub("\ufffd", line), by_name=False)
    except ValidationError:
        return None
    if not isinstance(message, types.JSONRPCResponse | types.JSONRPCError):
        return None
    why = (f"its answer was not UTF-8 text ({len(stray)} byte(s) that UTF-8 does not allow, the first "
           f"0x{stray[0]:02X}), so it was not used; an MCP server must write UTF-8 on stdout")
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=message.id,
                                             error=types.ErrorData(code=types.PARSE_ERROR, message=why,
                                                                   data=NOT_UTF8)))


def reparse(error: Exception) -> SessionMessage | None:
    """The message a stdio line would have been, repaired, when ``error`` is the SDK's failure to parse
    it; None when it is anything else or still does not parse."""
    if not isinstance(error, ValidationError):
        return None
    details = error.errors()
    if not details or details[0]["type"] != "json_invalid":
        return None
    line = details[0].get("input")
    if isinstance(line, bytes):
        line = line.decode(errors="replace")
    if not isinstance(line, str):
        return None
    fixed = repair(line)
    if fixed == line:
        return None
    try:
        return SessionMessage(types.jsonrpc_message_adapter.validate_json(fixed, by_name=False))
    except ValidationError:
        return None
