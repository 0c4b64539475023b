"""MCP servers as a tool source: an admin registers a server, its tools become ``agent_tools`` rows of
type ``mcp``, and calls go through the same wrapper as every other tool (see ``tools.mcp.service``)."""
