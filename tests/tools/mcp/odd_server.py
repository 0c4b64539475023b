"""An MCP server built with the ``mcp`` SDK's low-level ``Server``, saying what real servers say and
``MCPServer`` never would: input schemas written by hand (``$ref``/``$defs``, ``anyOf``/``oneOf``, enums,
nested objects, no ``properties`` at all, a huge description), and answers a careful server would not
give (U+0000 and lone surrogates in text, very large text, structured content and resources, a slow
tool; over stdio, an answer in Latin-1 rather than UTF-8, and with ``RESULT_FIRST=1`` in its environment
answers that put the result before the id, as the TypeScript SDK does).

Serve it over streamable HTTP with ``build().streamable_http_app()``, or run this file for stdio.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared.message import SessionMessage

HUGE_DESCRIPTION = "Does one thing. " * 4000  # 64,000 characters
BIG_TEXT_CHARS = 3_000_000
SLEEPS: list[str] = []  # what became of ``sleepy`` calls ("started", "cancelled"), for in-process servers

REF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "$defs": {
        "Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}},
                  "required": ["x", "y"], "additionalProperties": False},
        "Colour": {"type": "string", "enum": ["red", "green", "blue"]},
    },
    "properties": {
        "start": {"$ref": "#/$defs/Point"},
        "end": {"$ref": "#/$defs/Point"},
        "colour": {"$ref": "#/$defs/Colour"},
        "label": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "shape": {"oneOf": [
            {"type": "object", "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}},
             "required": ["kind", "r"]},
            {"type": "object", "properties": {"kind": {"const": "square"}, "side": {"type": "number"}},
             "required": ["kind", "side"]},
        ]},
        "tags": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"},
                                                                              "v": {"type": "string"}}}},
    },
    "required": ["start", "end"],
}


def _tools() -> list[types.Tool]:
    return [
        types.Tool(name="draw", description="Draw a line.", input_schema=REF_SCHEMA),
        types.Tool(name="bare", description="Takes anything.", input_schema={"type": "object"}),
        types.Tool(name="verbose", description=HUGE_DESCRIPTION, input_schema={"type": "object", "properties": {}}),
        types.Tool(name="dirty", description="Text with U+0000 and a lone surrogate.",
                   input_schema={"type": "object", "properties": {}}),
        types.Tool(name="dirty_structured", description="Structured content with U+0000 and a lone surrogate.",
                   input_schema={"type": "object", "properties": {}}),
        types.Tool(name="nul", description="Text with U+0000.", input_schema={"type": "object", "properties": {}}),
        types.Tool(name="flood", description="A very large text.", input_schema={"type": "object", "properties": {}}),
        types.Tool(name="flood_structured", description="A very large structured result.",
                   input_schema={"type": "object", "properties": {}}),
        types.Tool(name="flood_resource", description="A very large embedded resource.",
                   input_schema={"type": "object", "properties": {}}),
        types.Tool(name="latin1", description="Text written on stdio in Latin-1, not UTF-8.",
                   input_schema={"type": "object", "properties": {}}),
        types.Tool(name="sleepy", description="Sleeps for the given seconds.",
                   input_schema={"type": "object", "properties": {"seconds": {"type": "number"}},
                                 "required": ["seconds"]}),
    ]


DIRTY = "before\x00after \ud83d end"
LATIN1 = "café crème, encoded wrongly"  # over stdio, its message is written in Latin-1 (see _serve_stdio)


async def _list(ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=_tools())


async def _call(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    args = params.arguments or {}
    if params.name == "dirty":
        return types.CallToolResult(content=[types.TextContent(type="text", text=DIRTY)])
    if params.name == "dirty_structured":
        return types.CallToolResult(content=[types.TextContent(type="text", text="{}")],
                                    structured_content={"note": DIRTY, DIRTY: 1})
    if params.name == "nul":
        return types.CallToolResult(content=[types.TextContent(type="text", text="before\x00after")])
    if params.name == "flood":
        return types.CallToolResult(content=[types.TextContent(type="text", text="x" * BIG_TEXT_CHARS)])
    if params.name == "flood_structured":
        rows = [{"n": i, "word": "x" * 20} for i in range(BIG_TEXT_CHARS // 30)]
        return types.CallToolResult(content=[], structured_content={"rows": rows})
    if params.name == "flood_resource":
        big = types.TextResourceContents(uri="memo://big", mime_type="text/plain", text="y" * BIG_TEXT_CHARS)
        return types.CallToolResult(content=[types.EmbeddedResource(type="resource", resource=big)])
    if params.name == "latin1":
        return types.CallToolResult(content=[types.TextContent(type="text", text=LATIN1)])
    if params.name == "sleepy":
        SLEEPS.append("started")
        try:
            await asyncio.sleep(float(args.get("seconds", 0)))
        except asyncio.CancelledError:
            SLEEPS.append("cancelled")
            raise
        return types.CallToolResult(content=[types.TextContent(type="text", text="awake")])
    return types.CallToolResult(content=[types.TextContent(type="text", text=f"{params.name}: {sorted(args)}")])


def build() -> Server[Any]:
    return Server("odd", on_list_tools=_list, on_call_tool=_call)


async def _serve_stdio() -> None:
    """Serve over stdio, writing each message as ``JSON.stringify`` would: the SDK's own stdio writer
    refuses a lone surrogate (and the server hangs), a JavaScript server escapes it and sends it on."""
    server = build()
    if os.environ.get("BANNER"):  # what many servers do: a greeting on stdout, before any message
        print(os.environ["BANNER"], flush=True)
    to_server, reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
    writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)

    async def read_stdin() -> None:
        async with to_server:
            async for line in anyio.wrap_file(sys.stdin):
                await to_server.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(line)))

    async def write_stdout() -> None:
        async with from_server:
            async for message in from_server:
                data = message.message.model_dump(by_alias=True, mode="json", exclude_unset=True)
                if os.environ.get("RESULT_FIRST"):  # as the TypeScript SDK writes: {result, jsonrpc, id}
                    data = dict(sorted(data.items(), key=lambda kv: kv[0] not in ("result", "error")))
                raw = json.dumps(data, ensure_ascii=False)
                if LATIN1 in raw:  # a server that writes its text in the locale's 8-bit encoding: é is 0xE9
                    sys.stdout.buffer.write(raw.encode("latin-1") + b"\n")
                else:
                    sys.stdout.write(json.dumps(data) + "\n")
                sys.stdout.flush()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_stdin)
        tg.start_soon(write_stdout)
        await server.run(reads, writes, server.create_initialization_options())
        tg.cancel_scope.cancel()


if __name__ == "__main__":
    anyio.run(_serve_stdio)
