"""A small MCP server written with the ``mcp`` SDK's own ``MCPServer``: the peer of the MCP tests.

Tools return text (short, or of any size), structured data, images (a tiny one, one of any size with a
caption, and several), audio clips of any size, an embedded resource and an error; ``grow`` adds a tool
at run time and tells listening clients that the list changed, ``shrink`` removes one. Serve it over
streamable HTTP (``app()``, mounted in-process on a free port) or run this file for stdio, as an admin's
``command`` would (with ``LINGER=<seconds>`` in its environment it takes that long to exit). An optional
bearer token guards the HTTP side, so tests can check the secret is sent.
"""

from __future__ import annotations

import base64
import os
import sys
import uuid
from typing import Any

from mcp.server.mcpserver import Audio, Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import EmbeddedResource, TextContent, TextResourceContents
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

# A 1x1 PNG (a red pixel).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)


class Forecast(BaseModel):
    city: str
    celsius: float
    sky: str


def build(name: str = "testing") -> MCPServer:
    server = MCPServer(name, instructions="Tools for the agentloft tests.")
    instance = uuid.uuid4().hex  # tells one server process (or app) from the next

    @server.tool(description="Echo the text back, upper-cased when asked.")
    def shout(text: str, upper: bool = True) -> str:
        return text.upper() if upper else text

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="The weather in a city, as structured data.")
    def weather(city: str) -> Forecast:
        return Forecast(city=city, celsius=21.5, sky="clear")

    @server.tool(description="A tiny red square.")
    def picture() -> Image:
        return Image(data=PNG, format="png")

    @server.tool(description="A picture of the given size in KiB (the tiny one, padded), with a caption.",
                 structured_output=False)
    def big_picture(kib: int) -> list[Any]:
        return [TextContent(type="text", text=f"{kib} KiB"),
                Image(data=PNG + b"\0" * (kib * 1024 - len(PNG)), format="png").to_image_content()]

    @server.tool(description="Several pictures, each of the given size in KiB.", structured_output=False)
    def pictures(count: int, kib: int) -> list[Any]:
        image = Image(data=PNG + b"\0" * (kib * 1024 - len(PNG)), format="png").to_image_content()
        return [image] * count

    @server.tool(description="Audio clips of the given size in KiB each, with a caption.", structured_output=False)
    def recording(kib: int, clips: int = 1) -> list[Any]:
        clip = Audio(data=b"RIFF" + b"\0" * (kib * 1024 - 4), format="wav").to_audio_content()
        return [TextContent(type="text", text=f"{clips} x {kib} KiB"), *[clip] * clips]

    @server.tool(description="A text of the given size in KiB (one message of about that length).",
                 structured_output=False)
    def long_text(kib: int) -> str:
        return "x" * (kib * 1024)

    @server.tool(description="A short note as an embedded resource.")
    def note() -> list[Any]:
        return [
            TextContent(type="text", text="here is the note"),
            EmbeddedResource(type="resource", resource=TextResourceContents(
                uri="memo://note/1", mime_type="text/plain", text="remember the milk")),
        ]

    @server.tool(description="Always fails.")
    def broken(reason: str = "it broke") -> str:
        raise ToolError(reason)

    @server.tool(description="Who runs this server (process user and environment).")
    def whoami() -> dict[str, Any]:
        return {"uid": os.getuid(), "cwd": os.getcwd(), "env": sorted(os.environ),
                "greeting": os.environ.get("GREETING", ""), "instance": instance}

    @server.tool(description="Reads a file, or says why it cannot.")
    def read(path: str) -> str:
        try:
            with open(path, "rb") as f:
                return f"read {len(f.read())} bytes"
        except OSError as exc:
            return f"cannot read: {type(exc).__name__}"

    @server.tool(description="Adds the tool 'extra' and says that the tool list changed.")
    async def grow(ctx: Context) -> str:
        if "extra" not in {t.name for t in await server.list_tools()}:
            server.add_tool(lambda: "extra!", name="extra", description="Added at run time.")
        await ctx.notify_tools_changed()
        return "grown"

    @server.tool(description="Removes a tool by name.")
    async def shrink(name: str, ctx: Context) -> str:
        server.remove_tool(name)
        await ctx.notify_tools_changed()
        return "shrunk"

    return server


class BearerGuard:
    """Refuses requests without ``Authorization: Bearer <token>`` (401), records the headers it saw."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token
        self.headers: list[dict[str, str]] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            self.headers.append(headers)
            if self.token and headers.get("authorization") != f"Bearer {self.token}":
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"text/plain")]})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await self.app(scope, receive, send)


if __name__ == "__main__":
    name = sys.argv[1] if len(sys.argv) > 1 else "testing"
    build(name).run("stdio")
    if os.environ.get("LINGER"):  # a server slow to exit once its input ends, seen as "lingering-<name>"
        os.execv("/usr/bin/sleep", [f"lingering-{name}", os.environ["LINGER"]])
