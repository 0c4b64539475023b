"""The status types (``chat.models``, ``chat.runs``) name every status the chat tables and the engine
use: a status added to one but not the other is caught here, not by a reply saved with a status no page
knows, or by a stop whose reason has no note."""

from typing import get_args

from agentloft.chat import models
from agentloft.chat.engine import _STOP_NOTES
from agentloft.chat.runs import StopReason


def test_every_status_constant_is_a_typed_status() -> None:
    constants = {value for name, value in vars(models).items()
                 if name.isupper() and isinstance(value, str) and not name.startswith("TITLE_")}
    assert constants == set(get_args(models.SessionStatus)) | set(get_args(models.MessageStatus))
    assert set(get_args(models.SessionStatus)) == {models.IDLE, models.RUNNING, models.AWAITING_APPROVAL}


def test_a_turn_ends_with_any_message_status_but_streaming() -> None:
    assert set(get_args(models.TurnStatus)) == set(get_args(models.MessageStatus)) - {models.STREAMING}


def test_every_stop_but_a_shutdown_has_its_note() -> None:
    assert set(_STOP_NOTES) | {"interrupted"} == set(get_args(StopReason))
