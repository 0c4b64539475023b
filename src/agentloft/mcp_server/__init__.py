"""The MCP server at ``/mcp``: every agent a token's user may use is a tool ``ask_<slug>`` of MCP hosts."""
