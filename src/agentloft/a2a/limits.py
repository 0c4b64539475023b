"""What one A2A request may carry, checked on its raw body before a2a-sdk parses it.

The SDK turns a request into protobuf messages with protobuf's JSON parser, which is written in Python: a
``SendMessage`` of 400,000 one-letter parts (a 6 MB body) took 46 s of the event loop, and every other
request waited; a single 15 MB text part was parsed, stored in the task and sent to the model. So both
bindings (JSON-RPC and HTTP+JSON) read the body here first, and refuse, in the binding's own error shape
and before any task, session or model call exists:

- a body over :data:`MAX_BODY_BYTES` (reading stops there): room for the chat's 100,000 characters in any
  JSON spelling (an astral character escaped as a surrogate pair takes 12 bytes) and the rest of a message;
- JSON nested deeper than the ``json`` module parses (it raises ``RecursionError``, which reached the
  client as a JSON-RPC "internal error", and as an HTTP 500 for a body sent with a non-JSON type);
- a message of more than :data:`MAX_PARTS` parts, or whose text parts together are longer than the
  chat's limit for one message (:data:`MAX_TEXT_CHARS`, counted as the agent receives the text: the
  parts joined by a newline each).

The body is parsed once, with the standard library's C parser (about 45 ms for the largest body
allowed), and the JSON-RPC side hands that parse to the SDK (:class:`CheckedRequest`) instead of having it
parsed again.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any, Literal

from a2a.server.jsonrpc_models import JSONParseError, JSONRPCError
from a2a.utils.errors import A2AError, InvalidParamsError, InvalidRequestError
from starlette.requests import Request
from starlette.types import Scope

from agentloft.chat.schemas import MAX_MESSAGE_CHARS

MAX_BODY_BYTES = 2 * 1024 * 1024
MAX_PARTS = 100
MAX_TEXT_CHARS = MAX_MESSAGE_CHARS

Kind = Literal["too_large", "unreadable", "params"]


class NotJson:
    """The parse of a body that is not JSON: the SDK answers it (-32700, or the REST binding's 400)."""


NOT_JSON = NotJson()


class Refused(Exception):
    """A request refused before the SDK saw it. ``kind`` picks the error each binding answers with."""

    def __init__(self, kind: Kind, message: str) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message

    def jsonrpc_error(self) -> A2AError | JSONRPCError:
        """-32600 for a body too large (as the SDK answers a 413), -32700 for one that does not parse (the
        SDK's own parse error), -32602 for a message over the limits."""
        if self.kind == "unreadable":
            return JSONParseError(message=self.message)
        return (InvalidParamsError if self.kind == "params" else InvalidRequestError)(message=self.message)

    def rest_error(self) -> A2AError:
        """The REST binding's 400 (``INVALID_ARGUMENT``): it has no mapping for a parse error of its own."""
        return (InvalidParamsError if self.kind == "params" else InvalidRequestError)(message=self.message)


class CheckedRequest(Request):
    """The request with its body already read and parsed here: ``body()`` and ``json()`` answer from
    what was read, so the SDK neither reads the (consumed) stream again nor parses the JSON twice."""

    def __init__(self, scope: Scope, request: Request, raw: bytes, data: Any) -> None:
        super().__init__(scope, request.receive)
        self.checked_raw = raw
        self.checked_data = data

    async def stream(self) -> AsyncGenerator[bytes, None]:
        yield self.checked_raw
        yield b""

    async def body(self) -> bytes:
        return self.checked_raw

    async def json(self) -> Any:
        if isinstance(self.checked_data, NotJson):
            return json.loads(self.checked_raw)  # raises as Starlette would; the SDK answers -32700
        return self.checked_data

    def with_scope(self, scope: Scope) -> CheckedRequest:
        """The same body under another scope (the REST binding's routes match a path of their own)."""
        return CheckedRequest(scope, self, self.checked_raw, self.checked_data)

    def request_id(self) -> str | int | None:
        """The JSON-RPC id, when the body has a usable one (a string or an integer, never a bool)."""
        data = self.checked_data
        value = data.get("id") if isinstance(data, dict) else None
        return value if isinstance(value, str | int) and not isinstance(value, bool) else None


async def _read(request: Request) -> bytes:
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise Refused("too_large", _too_large())
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise Refused("too_large", _too_large())
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large() -> str:
    return f"the request body is larger than {MAX_BODY_BYTES:,} bytes, the most an A2A request may send"


def _parse(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except RecursionError:
        raise Refused("unreadable", "the request's JSON is nested too deeply") from None
    except ValueError:  # not JSON, or not UTF-8
        return NOT_JSON


async def read(request: Request) -> CheckedRequest:
    """Read and parse the body, at most :data:`MAX_BODY_BYTES`; raises :class:`Refused` past that or when
    the JSON is nested too deeply. A body that is not JSON is left for the SDK to refuse."""
    raw = await _read(request)
    return CheckedRequest(request.scope, request, raw, _parse(raw))


def check_message(message: Any) -> None:
    """Refuse a message with too many parts or too much text. Anything that is not shaped like a message
    is left alone: the SDK says what is wrong with it."""
    parts = message.get("parts") if isinstance(message, dict) else None
    if not isinstance(parts, list):
        return
    if len(parts) > MAX_PARTS:
        raise Refused("params", f"the message has {len(parts):,} parts; at most {MAX_PARTS} are accepted")
    texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
    length = sum(map(len, texts)) + max(len(texts) - 1, 0)
    if length > MAX_TEXT_CHARS:
        raise Refused("params", f"the message's text is {length:,} characters long; at most {MAX_TEXT_CHARS:,} "
                                "are accepted")


def jsonrpc_message(request: CheckedRequest) -> Any:
    """The message of a JSON-RPC ``SendMessage``/``SendStreamingMessage`` (``params.message``)."""
    data = request.checked_data
    params = data.get("params") if isinstance(data, dict) else None
    return params.get("message") if isinstance(params, dict) else None


def rest_message(request: CheckedRequest) -> Any:
    """The message of a REST ``message:send``/``message:stream`` (``message``)."""
    data = request.checked_data
    return data.get("message") if isinstance(data, dict) else None
