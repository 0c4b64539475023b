"""The A2A tests' agents and agent-invoke tool, for the access matrix."""

from tests.a2a.conftest import invoke_tool, make_agent

__all__ = ["invoke_tool", "make_agent"]
