"""The files domain's refusals, answered in the one error shape by the shared handler."""

from __future__ import annotations

from agentloft.core.errors import AppError, Conflict, NotFound


class FileNotFound(NotFound):
    """The same answer whether the file does not exist or is another user's: no id probing."""

    code = "file_not_found"

    def __init__(self) -> None:
        super().__init__("file not found or no access")


class FileTooLarge(AppError):
    status = 413
    code = "file_too_large"

    def __init__(self, limit: int) -> None:
        super().__init__(f"the file is larger than the limit of {limit} bytes ({limit / 2**20:g} MiB)")
        self.limit = limit


class FileTypeUnsupported(AppError):
    status = 415
    code = "file_type_unsupported"


class FileProcessing(Conflict):
    """Its text is asked for while it is still being read."""

    code = "file_processing"

    def __init__(self) -> None:
        super().__init__("the file is still being read; try again in a moment")


class FileUnreadable(AppError):
    """Its text is asked for, but reading it failed; the message is the file's own error."""

    status = 422
    code = "file_unreadable"

    def __init__(self, reason: str) -> None:
        super().__init__(f"the file could not be read: {reason}")


SANDBOX_UNAVAILABLE = "the sandbox that reads documents is unavailable"


class FileExtractionUnavailable(AppError):
    """A document is uploaded on a host whose sandbox cannot run: refused before anything is kept, with the
    reason the python tool gives (text and images need no sandbox and keep working)."""

    status = 503
    code = "file_extraction_unavailable"

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(f"{SANDBOX_UNAVAILABLE}, so this {what} was not kept: {reason}")
