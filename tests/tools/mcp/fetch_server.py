"""A stdio MCP server (the ``mcp`` SDK's ``MCPServer``) with one tool that fetches a URL with the standard
library, which uses the proxy its environment names, as most HTTP clients do."""

from __future__ import annotations

import urllib.error
import urllib.request

from mcp.server.mcpserver import MCPServer

server = MCPServer("fetcher")


@server.tool(description="The status and the start of the body of a GET of the URL.")
def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return f"{response.status} {response.read().decode()[:15]}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode()}"
    except OSError as exc:
        return f"failed: {exc}"


if __name__ == "__main__":
    server.run("stdio")
