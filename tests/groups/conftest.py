"""The A2A tests' agents and agent-invoke tool, and the chat tests' add-on tool types, for the access
matrix."""

from tests.a2a.conftest import invoke_tool, make_agent
from tests.chat.conftest import test_tools

__all__ = ["invoke_tool", "make_agent", "test_tools"]
