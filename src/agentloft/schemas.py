"""Shared API schema pieces: camelCase on the wire, snake_case in Python, and the seeds' list shape."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Generic, TypeVar

from fastapi import Depends, Query
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


async def _page_params(
    page: Annotated[int, Query(ge=1, le=100_000)] = 1,
    page_size: Annotated[int, Query(alias="pageSize", ge=1, le=100)] = 20,
) -> PageParams:
    return PageParams(page=page, page_size=page_size)


Paging = Annotated[PageParams, Depends(_page_params)]


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
