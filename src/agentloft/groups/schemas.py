"""Request and response bodies of the groups API, and ``GroupIds``: the ``groupIds`` field that agents,
models, tools and knowledge collections share, so each is limited to groups with the same words and limit.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, StringConstraints

from agentloft.core.schemas import ApiModel, BodyId

GroupName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]
# Members are set as a whole list; a few thousand ids keep the body small.
MemberIds = Annotated[list[BodyId], Field(max_length=10_000)]
# The groups a resource is limited to, in its create, update and read bodies.
GroupIds = Annotated[list[BodyId], Field(max_length=200)]
GROUP_IDS_DOC = "Only members of these groups (and admins) see and use it; empty: everyone."


class GroupCreate(ApiModel):
    name: GroupName
    description: str = Field(default="", max_length=2000)


class GroupUpdate(ApiModel):
    name: GroupName | None = None
    description: str | None = Field(default=None, max_length=2000)


class GroupRead(ApiModel):
    id: int
    name: str
    description: str
    source: str = Field(description="'local' (made by admins) or the slug of the sign-in provider it is synced from.")
    member_count: int
    created_at: datetime
    updated_at: datetime


class GroupMembers(ApiModel):
    """A group's members after ``PUT …/members``."""

    group: GroupRead
    user_ids: list[int]


class GroupRef(ApiModel):
    """A group as a user's row names it (Admin → Users)."""

    id: int
    name: str
    source: str
