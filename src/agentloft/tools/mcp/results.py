"""An MCP tool's answer as a ``ToolResult``.

``CallToolResult`` carries content blocks (text, images, audio, embedded resources, resource links), an
optional ``structuredContent`` and ``isError``. The mapping keeps what a model and a person can use:

- ``isError`` is a failed result whose error is the text the tool gave;
- only text (and no structured content): ``data`` is the text, blocks joined by blank lines;
- structured content and nothing beyond text: ``data`` is the structured value (the text is, by the
  protocol's own advice, the same value serialised, so it is not repeated);
- anything else: ``data`` is an object with ``text``, ``structured``, ``images`` (``mimeType``, base64
  ``data``), ``audio`` and ``resources`` (``uri``, ``mimeType``, ``text`` or base64 ``blob``, or a link's
  ``name``/``description``), each present only when there is one.
``metadata.mcp`` names the server and the tool as called.
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from agentloft.tools.base import ToolResult

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
            out["images"].append({"mimeType": block.mime_type, "data": block.data})
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
    media = {k: v for k, v in blocks.items() if k != "text" and v}
    structured = result.structured_content
    if not media:
        return ToolResult.ok(structured if structured is not None else text, **meta)
    data: dict[str, Any] = {}
    if text:
        data["text"] = text
    if structured is not None:
        data["structured"] = structured
    return ToolResult.ok({**data, **media}, **meta)
