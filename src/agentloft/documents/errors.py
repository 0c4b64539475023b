"""The seed's error cases as domain exceptions. The tool turns them into failed results with the same
message; the API maps them to their status through the shared error handler."""

from __future__ import annotations

from agentloft.core.errors import AppError, NotFound, Unauthorized, problem

NOT_FOUND_MESSAGE = "document not found or no access"
LOGIN_REQUIRED_MESSAGE = "this tool requires a signed-in session"


class DocumentNotFound(NotFound):
    """Same answer whether the document does not exist or belongs to someone else: no id probing."""

    code = "document_not_found"

    def __init__(self) -> None:
        super().__init__(NOT_FOUND_MESSAGE)


class VersionNotFound(NotFound):
    code = "document_version_not_found"

    def __init__(self, version: int) -> None:
        super().__init__(f"version {version} of this document does not exist")


class ContentTooLong(AppError):
    status = 413
    code = "content_too_long"

    def __init__(self, limit: int, length: int) -> None:
        super().__init__(
            f"content exceeds the maximum length ({length} > {limit} characters)",
            fields={"content": problem("string_too_long", f"at most {limit} characters", max_length=limit)},
        )
        self.limit = limit


class LoginRequired(Unauthorized):
    code = "login_required"

    def __init__(self) -> None:
        super().__init__(LOGIN_REQUIRED_MESSAGE)

