"""The knowledge domain's refusals, answered in the one error shape by the shared handler."""

from __future__ import annotations

from agentloft.core.errors import Invalid, NotFound, problem


class CollectionNotFound(NotFound):
    """The same answer whether the collection does not exist or is another user's: no id probing."""

    code = "knowledge_not_found"

    def __init__(self) -> None:
        super().__init__("knowledge collection not found or no access")


class KnowledgeFileNotFound(NotFound):
    """The file is not in this collection (it may still be one of the user's files)."""

    code = "knowledge_file_not_found"

    def __init__(self) -> None:
        super().__init__("this file is not in the collection")


def no_search_terms() -> Invalid:
    return Invalid("the search has no terms", fields={"q": problem("no_search_terms", "enter something to search for")})
