"""Turn events → UI-message-stream chunks: pydantic-ai's Vercel encoder with our error wording.

The encoder is reused as is (for ``chat.wire.SDK_VERSION``; its frames are ``chat.wire``'s), through its public
hooks only (``chat.steps`` yields the events it reads, so none of its private members is needed); only the
failure paths change: a model failure becomes an ``error`` chunk a person can read (not a provider's raw repr),
preceded by a ``data-error`` part with its kind (``llm.failures.classify``) so the page can word it in the
reader's language, hitting the step limit (``chat.steps.StepLimitReached``) ends the reply with a
``data-notice`` part instead of an error, and a budget used up between two model calls (``chat.budgeted``) ends
it with ``data-error`` ``budget_exceeded`` and the budget's values.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

from pydantic_ai.messages import CustomEvent, TextPart
from pydantic_ai.ui.vercel_ai import VercelAIEventStream
from pydantic_ai.ui.vercel_ai.response_types import BaseChunk, DataChunk, ErrorChunk

from agentloft.chat.steps import StepLimitReached
from agentloft.core.requests import current_request_id
from agentloft.llm.failures import classify
from agentloft.usage.budgets import BudgetExceeded

log = logging.getLogger(__name__)


def failure_chunk(data: dict[str, Any]) -> DataChunk:
    """The ``data-error`` part of a failed reply, with the id of the request that started the turn
    (``requestId``): the page shows it as the failure's reference, and it names the turn's log lines. The
    ``error`` chunk itself cannot carry it: the Vercel AI SDK's parser allows it no other field."""
    rid = current_request_id()
    return DataChunk(type="data-error", data={**data, "requestId": rid} if rid else data)


@dataclass
class EngineEventStream(VercelAIEventStream):
    max_steps: int = 0
    failure_text: str | None = None
    limit_hit: bool = False
    answering: bool = False  # the current response has streamed some text: a broken connection cut it off
    refusal: BudgetExceeded | None = None  # the budget that stopped the run between two model calls

    async def handle_custom_event(self, event: CustomEvent) -> AsyncIterator[BaseChunk]:
        if isinstance(event, StepLimitReached):  # the loop's last event when it used up its steps
            self.limit_hit = True
            note = (f"Stopped after {self.max_steps} steps, the most this agent may take for one reply. "
                    "Send a message to let it continue.")
            yield DataChunk(type="data-notice", data={"code": "max_steps", "steps": self.max_steps,
                                                       "level": "warning", "message": note})
            return
        async for chunk in super().handle_custom_event(event):
            yield chunk

    async def on_error(self, error: Exception) -> AsyncIterator[BaseChunk]:
        # The encoder's own failure handling announces a tool call whose input streamed before the failure
        # and ends the reply with ``finishReason: error``; only its ``error`` chunk (the raw exception's
        # text) is replaced by ours.
        async for chunk in super().on_error(error):
            if not isinstance(chunk, ErrorChunk):
                yield chunk
        if isinstance(error, BudgetExceeded):
            # a budget ran out between two model calls: the page words it from the code and its values
            self.failure_text = error.message
            self.refusal = error
            values = error.fields["budget"].code.get("params", {})
            yield failure_chunk({"code": error.code, **values})
            yield ErrorChunk(error_text=self.failure_text)
            return
        log.warning("model run failed: %r", error)
        failure = classify(error, mid_reply=self.answering)
        self.failure_text = failure.text
        yield failure_chunk(failure.data())
        yield ErrorChunk(error_text=self.failure_text)

    async def before_response(self) -> AsyncIterator[BaseChunk]:
        self.answering = False
        async for chunk in super().before_response():
            yield chunk

    async def handle_text_start(self, part: TextPart, follows_text: bool = False) -> AsyncIterator[BaseChunk]:
        self.answering = True
        async for chunk in super().handle_text_start(part, follows_text):
            yield chunk
