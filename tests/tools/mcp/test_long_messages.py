"""Messages longer than ``mcp_max_message_bytes``, from real servers: over stdio a too-long answer fails its
own call at once and the server process goes on; one that does not say which call it answers (the result
written before the id, as the TypeScript SDK does) ends the connection with that reason, and the next call
starts the server again. Over HTTP the same limit bounds each event.
Below the limit, long answers arrive whole. (What reading a long line costs is measured by
``python -m bench.mcp --long``.)"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest

from agentloft.tools.mcp.stdio import TOO_LONG, LineReader, TooLong, too_long_answer
from tests.support import ApiClient, LiveApp, running_app
from tests.tools.mcp import odd_server
from tests.tools.mcp.conftest import TOKEN, HttpPeer, stdio_command, tools_by_name
from tests.tools.mcp.test_calls import execute, wait_for
from tests.tools.mcp.test_stdio import launched

Add = Callable[..., dict[str, Any]]
LIMIT = 256 * 1024
TOO_LONG_ERROR = ("its answer was longer than the 262,144 bytes one message may have "
                  "(AGENTLOFT_MCP_MAX_MESSAGE_BYTES), so it was not used")


@pytest.fixture
def app(tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    yield from running_app(tmp_path, template_db, mcp_max_message_bytes=LIMIT)


def refreshed(admin: ApiClient, server: dict[str, Any]) -> dict[str, Any]:
    return tools_by_name(admin.ok("POST", f"/api/admin/mcp-servers/{server['id']}/refresh"))


def test_a_too_long_answer_over_stdio_fails_its_call_and_the_server_goes_on(
    admin: ApiClient, add_server: Add
) -> None:
    tools = refreshed(admin, add_server("long", transport="stdio", **stdio_command()))
    instance = execute(admin, tools["whoami"], {})["data"]["instance"]
    under = execute(admin, tools["long_text"], {"kib": 200})
    assert under["success"] is True, under
    assert under["metadata"]["leftOutChars"] == 200 * 1024 - 100_000, "arrived whole, then cut for the model"

    over = execute(admin, tools["long_text"], {"kib": 2048})
    assert over["success"] is False
    assert over["error"] == f"MCP server 'long': {TOO_LONG_ERROR}"
    assert execute(admin, tools["whoami"], {})["data"]["instance"] == instance, "the same process answers"


def test_a_too_long_message_that_names_no_call_ends_the_connection(admin: ApiClient, add_server: Add) -> None:
    marker = f"oddio-{uuid.uuid4().hex[:8]}"
    server = add_server("oddio", transport="stdio", command=sys.executable, args=[odd_server.__file__, marker],
                        env={"RESULT_FIRST": "1"})
    tools = refreshed(admin, server)
    assert execute(admin, tools["bare"], {})["data"] == "bare: []", "short answers, result first, are read"
    first = set(launched(marker))
    assert first
    flood = execute(admin, tools["flood"], {})
    assert flood["success"] is False
    assert flood["error"] == ("MCP server 'oddio': it sent a message longer than the 262,144 bytes one message "
                              "may have (AGENTLOFT_MCP_MAX_MESSAGE_BYTES), so its connection was closed")
    wait_for(lambda: not first & set(launched(marker)), "the server's process to be stopped")
    assert execute(admin, tools["bare"], {})["data"] == "bare: []", "the next call starts the server again"
    assert launched(marker)


def test_the_limit_bounds_each_event_over_http(
    admin: ApiClient, mcp_http: HttpPeer, allow_local: None, add_server: Add
) -> None:
    tools = refreshed(admin, add_server(transport="http", url=mcp_http.url, secret=TOKEN))
    assert execute(admin, tools["long_text"], {"kib": 200})["success"] is True
    over = execute(admin, tools["long_text"], {"kib": 2048})
    assert (over["success"], over["error"]) == (False, f"MCP server 'testing': {TOO_LONG_ERROR}")
    assert execute(admin, tools["add"], {"a": 1, "b": 2})["data"] == {"result": 3}


def _read(reader: LineReader, *chunks: bytes) -> list[bytes | TooLong]:
    return [line for chunk in chunks for line in reader.feed(chunk)]


def test_lines_are_cut_wherever_the_reads_end() -> None:
    reader = LineReader(max_bytes=10)
    assert _read(reader, b'{"a"', b":1}\n{", b'"b":2}\n\n{"c":', b"3}\n") == [b'{"a":1}', b'{"b":2}', b"", b'{"c":3}']
    assert _read(reader, b"0123456789\n") == [b"0123456789"], "exactly the limit is kept"


def test_a_line_past_the_limit_is_dropped_and_the_next_one_read() -> None:
    reader = LineReader(max_bytes=10)
    head = b'{"id": 1, "result": '
    lines = _read(reader, head, b"x" * 100, b"x" * 100 + b'"}\n{"ok":1}\n')
    assert lines == [TooLong(head), b'{"ok":1}']


def test_memory_stays_within_the_limit_whatever_the_line() -> None:
    """A 64 MiB line read in 64 KiB pieces: what is held never passes the limit plus one read."""
    reader = LineReader(max_bytes=LIMIT)
    piece = b"y" * 65536
    held = 0
    for _ in range(1024):
        assert list(reader.feed(piece)) in ([], [TooLong(piece[:512])])
        held = max(held, sum(len(p) for p in reader._parts))
    assert held <= LIMIT
    assert list(reader.feed(b"\n")) == []


@pytest.mark.parametrize(("head", "request_id"), [
    (b'{"jsonrpc":"2.0","id":7,"result":{"content":[', 7),
    (b'{"id": "a\\"b", "jsonrpc": "2.0", "error": {', 'a"b'),
    (b' {"jsonrpc":"2.0","id":-3,"result":', -3),
])
def test_an_answer_is_told_by_its_first_bytes(head: bytes, request_id: int | str) -> None:
    answer = too_long_answer(head, LIMIT)
    assert answer is not None
    message = answer.message
    assert isinstance(message, types.JSONRPCError) and message.id == request_id
    assert (message.error.data, message.error.message) == (TOO_LONG, TOO_LONG_ERROR)


@pytest.mark.parametrize("head", [
    b'{"result":{"content":[{"type":"text","text":"xxxx',  # the TypeScript SDK's order: the id comes last
    b'{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{',  # the server's own request
    b'{"jsonrpc":"2.0","method":"notifications/message","params":{"id":5,"result":',
])
def test_a_message_that_names_no_call_is_not_taken_for_an_answer(head: bytes) -> None:
    assert too_long_answer(head, LIMIT) is None
