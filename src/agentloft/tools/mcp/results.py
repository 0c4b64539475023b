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
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from agentloft.tools.base import ToolFile, ToolResult

TEXT_JOIN = "\n\n"


def _resource(block: types.EmbeddedResource | types.ResourceLink) -> dict[str, Any]:
    if isinstance(block, types.ResourceLink):
        link = {"uri": str(block.uri), "name": block.name, "description": block.description,
                "mimeType": block.mime_type}
        return {k: v for k, v in link.items() if v is not None}
    inner = block.resource
    out: dict[str, Any] = {"uri": str(inner.uri), "mimeType": inner.mime_type}
    if isinstance(inner, types.TextResourceContents):
        out["text"] = inner.text
    else:
        out["blob"] = inner.blob
    return {k: v for k, v in out.items() if v is not None}


def _sorted_blocks(result: types.CallToolResult) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {"text": [], "images": [], "audio": [], "resources": []}
    for block in result.content:
        if isinstance(block, types.TextContent):
            out["text"].append(block.text)
        elif isinstance(block, types.ImageContent):
            out["images"].append(ToolFile(media_type=block.mime_type, data=block.data))
        elif isinstance(block, types.AudioContent):
            out["audio"].append({"mimeType": block.mime_type, "data": block.data})
        elif isinstance(block, types.EmbeddedResource | types.ResourceLink):
            out["resources"].append(_resource(block))
    return out


def to_tool_result(result: types.CallToolResult, *, server: str, tool: str) -> ToolResult:
    meta = {"mcp": {"server": server, "tool": tool}}
    blocks = _sorted_blocks(result)
    text = TEXT_JOIN.join(blocks["text"])
    if result.is_error:
        return ToolResult.fail(text or f"the MCP tool '{tool}' reported an error", **meta)
    files: list[ToolFile] = blocks["images"]
    media = {k: blocks[k] for k in ("audio", "resources") if blocks[k]}
    structured = result.structured_content
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
