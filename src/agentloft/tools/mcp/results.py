"""An MCP tool's answer as a ``ToolResult``.

``CallToolResult`` carries content blocks (text, images, audio, embedded resources, resource links), an
optional ``structuredContent`` and ``isError``. The mapping keeps what a model and a person can use:

- ``isError`` is a failed result whose error is the text the tool gave;
- images are the result's ``files`` (``mediaType``, base64 ``data``): the model gets them as image parts
  and the chat's tool card shows them, rather than base64 text inside the result;
- only text (and no structured content): ``data`` is the text, blocks joined by blank lines (``None``
  when there is no text but there are images);
- structured content and nothing beyond text: ``data`` is the structured value (the text is, by the
  protocol's own advice, the same value serialised, so it is not repeated);
- audio or resources too: ``data`` is an object with ``text``, ``structured``, ``audio`` (``mimeType``,
  base64 ``data``) and ``resources`` (``uri``, ``mimeType``, ``text`` or base64 ``blob``, or a link's
  ``name``/``description``), each present only when there is one.
``metadata.mcp`` names the server and the tool as called.

A tool may answer with megabytes (a whole log, a table dump, a recording). Everything a result holds goes
to the model with every later request of the run and into the saved message, so every piece is bounded:

- the tool's ``maxOutputChars`` bounds the text (and an error's text), cut with a note saying how much was
  left out; structured content that serialises longer is replaced by that cut text; each resource's
  text is cut the same way;
- base64 the model can only read as text (audio clips, resource blobs: no model API takes them from a
  tool) costs what text of its length costs, so it falls under the same ``maxOutputChars``, all of one
  call's together: the clips and blobs that would take it past the limit are left out, named by their
  type and size (``omitted``, ``size`` in bytes) so the model can say what it did not get;
- images go to the model as images (``chat.toolset``), each at most ``tools.base.MAX_FILE_BYTES``; one
  call's images together at most ``MAX_IMAGE_BYTES``, the later ones left out and named in ``data``'s
  ``images`` list the same way.

``metadata.leftOutChars`` says how many characters (base64 counted as such) were left out in all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import mcp_types as types

from agentloft.tools.base import MAX_FILE_BYTES, ToolFile, ToolResult, base64_size

TEXT_JOIN = "\n\n"
# The images of one call together, decoded: what a model takes as one image. Each image is sent with
# every later request of the run, so a server answering with a hundred large pictures would otherwise make
# each of those requests hundreds of megabytes; a call that needs more images than this is rare.
MAX_IMAGE_BYTES = MAX_FILE_BYTES


def _omitted(mime_type: str, base64_data: str) -> dict[str, Any]:
    """A clip, blob or image left out, as the model and the tool card read it: its type and size."""
    return {"mimeType": mime_type, "omitted": True, "size": base64_size(base64_data)}


@dataclass
class _Limit:
    """Cuts what is too long, and counts what it left out."""

    max_chars: int
    left_out: int = 0
    base64_chars: int = 0  # audio and blobs kept so far
    image_bytes: int = 0  # images kept so far

    def base64(self, mime_type: str, data: str) -> dict[str, Any] | None:
        """``None`` when ``data`` fits in what is left of the call's limit (and now counts against it), else
        the note that stands for it."""
        if self.base64_chars + len(data) <= self.max_chars:
            self.base64_chars += len(data)
            return None
        self.left_out += len(data)
        return _omitted(mime_type, data)

    def image(self, block: types.ImageContent) -> ToolFile | dict[str, Any]:
        size = base64_size(block.data)
        if self.image_bytes + size <= MAX_IMAGE_BYTES:
            self.image_bytes += size
            return ToolFile(media_type=block.mime_type, data=block.data)
        self.left_out += len(block.data)
        return _omitted(block.mime_type, block.data)

    def text(self, text: str) -> str:
        if len(text) <= self.max_chars:
            return text
        over = len(text) - self.max_chars
        self.left_out += over
        return f"{text[: self.max_chars]}\n\n[{over:,} more characters of this output were left out]"

    def structured(self, value: Any, text: str) -> tuple[Any, str]:
        """(structured value, text still to cut): a value too long to keep gives way to its text (or to
        itself serialised, when the tool gave no text)."""
        if value is None:
            return None, text
        serialised = json.dumps(value, ensure_ascii=False, default=str)
        if len(serialised) <= self.max_chars:
            return value, text
        return None, text or serialised


def _resource(block: types.EmbeddedResource | types.ResourceLink, limit: _Limit) -> dict[str, Any]:
    if isinstance(block, types.ResourceLink):
        link = {"uri": str(block.uri), "name": block.name, "description": block.description,
                "mimeType": block.mime_type}
        return {k: v for k, v in link.items() if v is not None}
    inner = block.resource
    out: dict[str, Any] = {"uri": str(inner.uri), "mimeType": inner.mime_type}
    if isinstance(inner, types.TextResourceContents):
        out["text"] = limit.text(inner.text)
    else:
        omitted = limit.base64(inner.mime_type or "application/octet-stream", inner.blob)
        out.update({"omitted": True, "size": omitted["size"]} if omitted else {"blob": inner.blob})
    return {k: v for k, v in out.items() if v is not None}


def _sorted_blocks(result: types.CallToolResult, limit: _Limit) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"text": [], "files": [], "images": [], "audio": [], "resources": []}
    for block in result.content:
        if isinstance(block, types.TextContent):
            out["text"].append(block.text)
        elif isinstance(block, types.ImageContent):
            image = limit.image(block)
            out["files" if isinstance(image, ToolFile) else "images"].append(image)
        elif isinstance(block, types.AudioContent):
            omitted = limit.base64(block.mime_type, block.data)
            out["audio"].append(omitted or {"mimeType": block.mime_type, "data": block.data})
        elif isinstance(block, types.EmbeddedResource | types.ResourceLink):
            out["resources"].append(_resource(block, limit))
    return out


def to_tool_result(result: types.CallToolResult, *, server: str, tool: str, max_chars: int) -> ToolResult:
    limit = _Limit(max_chars)
    meta: dict[str, Any] = {"mcp": {"server": server, "tool": tool}}
    blocks = _sorted_blocks(result, limit)
    structured, text = limit.structured(result.structured_content, TEXT_JOIN.join(blocks["text"]))
    text = limit.text(text)
    if limit.left_out:
        meta["leftOutChars"] = limit.left_out
    if result.is_error:
        return ToolResult.fail(text or f"the MCP tool '{tool}' reported an error", **meta)
    files: list[ToolFile] = blocks["files"]
    media = {k: blocks[k] for k in ("images", "audio", "resources") if blocks[k]}
    data: Any
    if media:
        data = _combined(text, structured, media)
    elif structured is not None:
        data = structured
    else:
        data = text if text or not files else None
    return ToolResult(success=True, data=data, files=files, metadata=meta)


def _combined(text: str, structured: Any, media: dict[str, list[Any]]) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if text:
        data["text"] = text
    if structured is not None:
        data["structured"] = structured
    return {**data, **media}
