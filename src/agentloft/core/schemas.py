"""Shared API schema pieces: camelCase on the wire, snake_case in Python, and the seeds' list shape.

No web framework here: services take ``PageParams`` too. The query-string dependency that builds one is
``core.dependencies.Paging``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Generic, TypeVar

from annotated_types import Interval
from pydantic import AfterValidator, BaseModel, ConfigDict, Strict
from pydantic.alias_generators import to_camel

from agentloft.core.db import UNSTORABLE
from agentloft.core.errors import pydantic_problem

T = TypeVar("T")

# The range of the database's INTEGER columns (32 bits on PostgreSQL). An id, filter or reference beyond
# it matches nothing, and the drivers refuse to send it (asyncpg past 32 bits, SQLite past 64): a 500.
# Every integer a client sends that reaches a query is a ``DbInt``, so it is a 422 instead.
DB_INT_MAX = 2**31 - 1
DbInt = Annotated[int, Interval(ge=-DB_INT_MAX - 1, le=DB_INT_MAX)]
# A row's id in a JSON body: a JSON number without a fraction. A lax parse would take "5", 5.0 and even
# true (as 1): a client's bug saved as if meant. Paths and query strings are text, so they keep ``DbInt``.
# Other integers in bodies are ``StrictInt`` with their own bounds: a ``Field(ge=...)`` next to ``DbInt``
# would be overridden by its wider interval.
BodyId = Annotated[DbInt, Strict()]
# Booleans in request bodies are pydantic's ``StrictBool`` for the same reason: a lax parse takes "yes",
# "on", "1" and 1 as true, "no", "off" and 0 as false (a checkbox's value or a number sent by mistake).




def _storable_only(value: str) -> str:
    if UNSTORABLE.search(value):
        raise pydantic_problem(
            "unstorable_text", "may not contain the NUL character (\\u0000) or a lone surrogate (\\ud800-\\udfff)"
        )
    return value


# A client's text bound for a column that would quietly store U+0000 as U+FFFD (``core.db.Storable*``, made
# for a model's and a tool's text): refused with a 422 naming the field instead, as every other column's
# database refuses it. The client can fix what it sends; a model's reply cannot be sent again.
ClientText = AfterValidator(_storable_only)


class ApiModel(BaseModel):
    """Base for request and response bodies: JSON keys are camelCase, unknown keys are refused."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, from_attributes=True, extra="forbid"
    )


class PageParams(BaseModel):
    page: int = 1
    page_size: int = 20

    @property
    def offset(self) -> int:
        return (self.page - 1) * self.page_size


class Page(ApiModel, Generic[T]):
    """The seeds' list shape: ``{items, total, page, pageSize, hasMore}``."""

    items: list[T]
    total: int
    page: int
    page_size: int
    has_more: bool

    @classmethod
    def of(cls, items: Sequence[T], total: int, params: PageParams) -> Page[T]:
        return cls(
            items=list(items),
            total=total,
            page=params.page,
            page_size=params.page_size,
            has_more=params.offset + len(items) < total,
        )

    @classmethod
    def whole(cls, items: Sequence[T]) -> Page[T]:
        """All of a small set edited or shown as a whole (an agent's tools, a server's tools) as one page."""
        return cls.of(items, len(items), PageParams(page=1, page_size=max(len(items), 1)))
