"""What went wrong with a model, in words a person can act on: for the chat's error chunk (``chat.stream``)
and for an administrator's Test button (``llm.service.test_model``), one wording for both.

A provider's raw exception (``status_code: 404, model_name: …, body: {…}``) goes to the log only;
``classify`` gives its kind, which pages word in the reader's language, with an English sentence.
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic_ai.exceptions import ModelAPIError, ModelHTTPError, UnexpectedModelBehavior

from agentloft.llm.providers import ModelSetupError


class Failure(NamedTuple):
    """One failure of a model run: its kind (``code``, with the HTTP ``status`` when the model answered
    with one) for pages to word in the reader's language, our English sentence (``text``, kept as the
    message's error and shown by clients that know no codes), and the provider's or the exception's own
    words (``detail``), which no catalog can translate and pages show as they are."""

    code: str
    text: str
    status: int | None = None
    detail: str | None = None

    def data(self) -> dict[str, object]:
        """The ``data-error`` part's data: ``{"code", "status"?, "detail"?}``."""
        out: dict[str, object] = {"code": self.code}
        if self.status is not None:
            out["status"] = self.status
        if self.detail:
            out["detail"] = self.detail
        return out


def classify(error: BaseException, *, mid_reply: bool = False) -> Failure:
    """What went wrong. ``mid_reply``: some of the answer had already arrived, so a broken connection is a
    reply cut off, not a model that could not be reached (whose base URL would be worth checking)."""
    if isinstance(error, ModelSetupError):
        return Failure("failed", f"The model is not set up correctly: {error}.", detail=str(error))
    if isinstance(error, ModelHTTPError):
        detail = _body_message(error.body)
        text = f"The model answered with HTTP {error.status_code}" + (f": {detail}" if detail else ".")
        return Failure("model_http", text, status=error.status_code, detail=detail)
    cause = error.__cause__
    name = type(cause).__name__ if cause else ""
    if "Timeout" in name or "Timeout" in type(error).__name__:
        return Failure("model_timeout", "The model did not answer in time.")
    if isinstance(error, ModelAPIError):
        if "Connection" in name or "Connection" in type(error).__name__:
            if mid_reply:
                return Failure("model_cut", "The model's connection broke off in the middle of the reply.")
            return Failure("model_unreachable", "The model could not be reached (connection failed).")
        return Failure("model_bad_reply", f"The model's reply could not be read: {error.message}",
                       detail=error.message)
    if isinstance(error, UnexpectedModelBehavior):
        return Failure("model_unexpected", f"The model behaved unexpectedly: {error.message}", detail=error.message)
    text = str(error) or type(error).__name__
    return Failure("failed", f"The reply failed: {text}", detail=text[:300])


def describe_failure(error: BaseException, *, mid_reply: bool = False) -> str:
    """A sentence for the user; the raw exception goes to the log."""
    return classify(error, mid_reply=mid_reply).text


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
