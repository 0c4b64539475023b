"""Agent events → UI-message-stream chunks: pydantic-ai's Vercel encoder with our error wording.

The encoder is reused as is (``sdk_version=6`` for ``tool-approval-request``); only the failure paths
change: a model failure becomes an ``error`` chunk a person can read (not a provider's raw repr), preceded
by a ``data-error`` part with its kind (``failure_code``) so the page can word it in the reader's language, and
hitting the step limit ends the reply with a ``data-notice`` part instead of an error.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

from pydantic_ai.exceptions import (
    ModelAPIError,
    ModelHTTPError,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
)
from pydantic_ai.ui.vercel_ai import VercelAIEventStream
from pydantic_ai.ui.vercel_ai.response_types import BaseChunk, DataChunk, ErrorChunk

from agentloft.llm.providers import ModelSetupError

log = logging.getLogger(__name__)


def describe_failure(error: BaseException) -> str:
    """A sentence for the user; the raw exception goes to the log."""
    if isinstance(error, ModelSetupError):
        return f"The model is not set up correctly: {error}."
    if isinstance(error, ModelHTTPError):
        detail = _body_message(error.body) or ""
        return f"The model answered with HTTP {error.status_code}" + (f": {detail}" if detail else ".")
    cause = error.__cause__
    name = type(cause).__name__ if cause else ""
    if "Timeout" in name or "Timeout" in type(error).__name__:
        return "The model did not answer in time."
    if isinstance(error, ModelAPIError):
        if "Connection" in name or "Connection" in type(error).__name__:
            return "The model could not be reached (connection failed)."
        return f"The model's reply could not be read: {error.message}"
    if isinstance(error, UnexpectedModelBehavior):
        return f"The model behaved unexpectedly: {error.message}"
    text = str(error) or type(error).__name__
    return f"The reply failed: {text}"


def failure_code(error: BaseException) -> dict[str, object]:
    """What kind of failure this is, for the page to explain in the reader's language and say what to
    check: ``{"code": …}`` plus the HTTP ``status`` when the model answered with one. Mirrors
    ``describe_failure``, whose English sentence stays the message's error text."""
    if isinstance(error, ModelHTTPError):
        return {"code": "model_http", "status": error.status_code}
    cause = error.__cause__
    name = type(cause).__name__ if cause else ""
    if "Timeout" in name or "Timeout" in type(error).__name__:
        return {"code": "model_timeout"}
    if isinstance(error, ModelAPIError):
        connection = "Connection" in name or "Connection" in type(error).__name__
        return {"code": "model_unreachable" if connection else "model_bad_reply"}
    if isinstance(error, UnexpectedModelBehavior):
        return {"code": "model_unexpected"}
    return {"code": "failed"}


def _body_message(body: object) -> str | None:
    if isinstance(body, dict):
        err = body.get("error", body)
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:300]
        if isinstance(body.get("message"), str):
            return body["message"][:300]
    if isinstance(body, str | bytes):
        return (body.decode(errors="replace") if isinstance(body, bytes) else body)[:300]
    return None


@dataclass
class EngineEventStream(VercelAIEventStream):
    max_steps: int = 0
    failure_text: str | None = None
    limit_hit: bool = False

    async def on_error(self, error: Exception) -> AsyncIterator[BaseChunk]:
        for part in self._streamed_call_parts.values():
            yield self._tool_input_available_chunk(part)
        self._streamed_call_parts.clear()
        if isinstance(error, UsageLimitExceeded):
            self.limit_hit = True
            note = (f"Stopped after {self.max_steps} steps, the most this agent may take for one reply. "
                    "Send a message to let it continue.")
            yield DataChunk(type="data-notice", data={"code": "max_steps", "steps": self.max_steps,
                                                       "level": "warning", "message": note})
            return
        self._finish_reason = "error"
        log.warning("model run failed: %r", error)
        self.failure_text = describe_failure(error)
        yield DataChunk(type="data-error", data=failure_code(error))
        yield ErrorChunk(error_text=self.failure_text)
