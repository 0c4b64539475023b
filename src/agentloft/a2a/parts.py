"""A remote agent's message and artifact parts as the text a caller's model and the side panel read.

A2A parts are text, structured data (``data``), or a file given by URL (``url``) or inline (``raw``). A
remote reply is kept as text (the callee session's message, the agent-invoke tool's result), so every
kind must turn into text, or the answer of an agent that replies with data or a file is lost whole:

- text is kept as it is;
- data becomes a fenced JSON block, keys sorted (protobuf keeps no order), whole numbers without the
  ``.0`` protobuf gives every number (the model reads it, the panel shows it as code);
- a file by URL becomes a Markdown link named by its file name, with its media type;
- an inline file is named with its media type and size, its bytes left out (they are not text and may be
  large; the caller can ask the remote agent for a link instead).

Parts of one message or artifact follow each other as they came; blocks (data, files) stand on lines of
their own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from a2a.types import Part
from google.protobuf.json_format import MessageToDict

BLOCK_BREAK = "\n\n"


def _whole(value: Any) -> Any:
    """Protobuf keeps every JSON number as a double: 42 arrives as 42.0. Whole numbers read as written."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def _data(part: Part) -> str:
    value = _whole(MessageToDict(part.data))
    return "```json\n" + json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True) + "\n```"


def _file(part: Part) -> str:
    name = part.filename or ("file" if part.HasField("raw") else part.url.rsplit("/", 1)[-1] or "file")
    kind = f" ({part.media_type})" if part.media_type else ""
    if part.HasField("url"):
        return f"[{name}]({part.url}){kind}"
    return f"File {name}{kind}, {len(part.raw):,} bytes, not shown."


def _piece(part: Part) -> tuple[str, bool]:
    """The part as text, and whether it is a block (set apart from the text around it)."""
    kind = part.WhichOneof("content")
    if kind == "text":
        return part.text, False
    if kind == "data":
        return _data(part), True
    if kind in ("url", "raw"):
        return _file(part), True
    return "", False


class Joiner:
    """Joins the parts of a reply that arrives in pieces: artifact chunks, then perhaps another artifact.

    It remembers what came last, so a block is set apart from the text before and after it across
    pieces, and a new artifact starts after a blank line rather than glued to the end of the last one."""

    def __init__(self) -> None:
        self._any = False
        self._after_block = False
        self._break_next = False

    def next_artifact(self) -> None:
        """What comes next belongs to another artifact."""
        self._break_next = self._any

    def add(self, parts: Iterable[Part]) -> str:
        """The text to append for these parts."""
        out: list[str] = []
        for part in parts:
            piece, block = _piece(part)
            if not piece:
                continue
            if self._any and (block or self._after_block or self._break_next):
                out.append(BLOCK_BREAK)
            out.append(piece)
            self._any, self._after_block, self._break_next = True, block, False
        return "".join(out)


def render(parts: Iterable[Part]) -> str:
    """The parts of one message as one text (see the module docstring)."""
    return Joiner().add(parts)
