"""What the A2A server relies on in a2a-sdk's cluster support (a2a-sdk is pinned exactly; these fail when
an upgrade changes it). Serving tasks from several workers is tested end to end in tests/scale."""

from __future__ import annotations

import inspect

from a2a.server.cluster import TaskVersion
from a2a.server.request_handlers import DefaultRequestHandler

from agentloft.a2a.server import version_number


def test_a_version_number_comes_back_out_of_its_task_version() -> None:
    """``TaskVersion`` keeps its value private; ours are read back through its hash (a small int's hash is
    the int), which this pins."""
    for n in (0, 1, 7, 10**9):
        assert version_number(TaskVersion(n)) == n
    assert version_number(TaskVersion.MISSING) == 0
    assert TaskVersion(3).is_after(TaskVersion(2)) and not TaskVersion(2).is_after(TaskVersion(3))


def test_the_request_handler_takes_an_event_stream() -> None:
    """Cross-worker SubscribeToTask and CancelTask hang on this parameter of the default handler."""
    assert "event_stream" in inspect.signature(DefaultRequestHandler.__init__).parameters
