"""Shared API schema pieces: camelCase on the wire, snake_case in Python, and the seeds' list shape.

No web framework here: services take ``PageParams`` too. The query-string dependency that builds one is
``core.dependencies.Paging``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, TypeVar

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

T = TypeVar("T")


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
