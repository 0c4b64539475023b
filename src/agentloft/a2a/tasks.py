"""What names an A2A task outside its row: the stream buffers a task's reply and its protocol events go to.

Here rather than in ``a2a.service`` because ``a2a.remote`` writes a remote agent's reply into the same
buffer, and ``a2a.service`` imports ``a2a.remote``.
"""

from __future__ import annotations


def buffer_key(task_id: str) -> str:
    """The stream buffer a task's callee reply goes to (seed 003, decision 1): the side panel follows
    it, the A2A server relays its text."""
    return f"a2a_{task_id}"


def events_key(task_id: str) -> str:
    """The stream buffer of a task's A2A protocol events, for clients following it from any worker."""
    return f"a2a_events_{task_id}"
