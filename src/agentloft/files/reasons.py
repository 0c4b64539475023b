"""Why a file ended ``failed``, as a stable code beside its reason in English (``errorCode`` next to
``error`` in the API), so that pages word it in the reader's language (``fileError.<code>`` in
``web/i18n/errors.py``) and fall back to the reason as stored, as they do with the API's error codes.

Every reason the extraction gives starts with the words of its kind (``files.extract_worker``,
``files.extract``, ``files.jobs``: "damaged", "encrypted with a password", "expands too much"...), so the
code is read from those words and needs no column of its own; a reason of no known kind is
``unreadable``.
"""

from __future__ import annotations

from agentloft.files.errors import SANDBOX_UNAVAILABLE

KINDS = (
    ("damaged", "damaged"),
    ("encrypted", "encrypted"),
    ("too many ", "too_many_pages"),  # pages, slides or sheets
    ("too much text", "too_much_text"),
    ("expands too much", "expands_too_much"),
    ("timed out", "timed_out"),
    ("too much memory", "too_much_memory"),
    ("too much CPU time", "too_much_cpu"),
    (SANDBOX_UNAVAILABLE, "sandbox_unavailable"),
)
UNREADABLE = "unreadable"
CODES = frozenset({code for _, code in KINDS} | {UNREADABLE})


def error_code(error: str | None) -> str | None:
    """The code of a failed file's reason; None when there is no reason (the file did not fail)."""
    if error is None:
        return None
    return next((code for words, code in KINDS if error.startswith(words)), UNREADABLE)
