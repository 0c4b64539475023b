"""What went wrong with a model, in words a person can act on: for the chat's error chunk (``chat.stream``)
and for an administrator's Test button (``llm.service.test_model``), one wording for both.

A provider's raw exception (``status_code: 404, model_name: …, body: {…}``) goes to the log only;
``describe_failure`` gives an English sentence and ``failure_code`` its kind, which pages word in the
reader's language.
"""

from __future__ import annotations

from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior

from agentloft.llm.providers import ModelSetupError


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
