"""What A2A code says about a task outside its row, in one vocabulary: its states (the protocol's, as
``a2a.remote`` reads them from a remote agent and ``a2a.server`` writes them for its clients, and the
names our row keeps), the outcome of running one, and the stream buffers its reply and its protocol
events go to.

Here rather than in ``a2a.service`` because ``a2a.remote`` writes a remote agent's reply into the same
buffer and returns the same outcome, and ``a2a.service`` imports ``a2a.remote``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from a2a.types import TaskState

# The protocol's states after which a task does nothing more.
TERMINAL: Final = frozenset({TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED,
                             TaskState.TASK_STATE_CANCELED, TaskState.TASK_STATE_REJECTED})
# The protocol's states in which a task stops and waits for its caller (more input, authorization).
WAITING: Final = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})
# After these a task's event stream has nothing more to say (the SDK's own rule).
ENDING: Final = TERMINAL | WAITING

# Our row's names for the states (``a2a_task_sessions.state``): the protocol's, lower-case, no prefix.
SUBMITTED: Final = "submitted"
WORKING: Final = "working"
COMPLETED: Final = "completed"
FAILED: Final = "failed"
CANCELED: Final = "canceled"
REJECTED: Final = "rejected"
# The callee's turn waits for the calling user's approval of one of its tool calls (``a2a.waiting``).
INPUT_REQUIRED: Final = "input_required"
TERMINAL_STATES: Final = frozenset({COMPLETED, FAILED, CANCELED, REJECTED})

# How running a task ended, for the agent-invoke tool and the A2A server.
Ending = Literal["completed", "failed", "canceled", "input_required"]


def state_name(state: int) -> str:
    """Our row's name for a protocol state (``TASK_STATE_INPUT_REQUIRED`` → ``input_required``)."""
    return TaskState.Name(state).removeprefix("TASK_STATE_").lower()


def is_terminal(state: str) -> bool:
    """Whether a row's state is one a task never leaves."""
    return state in TERMINAL_STATES


@dataclass
class TaskOutcome:
    """How one run of a task ended: its state, the reply's text, and why it did not complete."""

    task_id: str
    state: Ending
    text: str
    error: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0


def buffer_key(task_id: str) -> str:
    """The stream buffer a task's callee reply goes to (seed 003, decision 1): the side panel follows
    it, the A2A server relays its text."""
    return f"a2a_{task_id}"


def events_key(task_id: str) -> str:
    """The stream buffer of a task's A2A protocol events, for clients following it from any worker."""
    return f"a2a_events_{task_id}"
