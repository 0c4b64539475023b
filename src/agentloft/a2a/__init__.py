"""Agent-to-agent calls: the internal agent-invoke path and the public A2A 1.0 server, one service."""
