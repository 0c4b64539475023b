"""The knowledge API's bodies (camelCase on the wire)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, StringConstraints

from agentloft.core.schemas import ApiModel, ClientText
from agentloft.groups.schemas import GroupIds
from agentloft.knowledge.models import KnowledgeFileStatus

# Only an admin's collections are searched by agents' knowledge tools (``tools.types.knowledge``).
COLLECTION_GROUPS_DOC = ("Admins only: an agent's knowledge tool searches this collection only for members of "
                         "these groups (and admins); empty: for everyone.")

Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255), ClientText]
Description = Annotated[str, StringConstraints(max_length=2000), ClientText]
CollectionStatus = Literal["processing", "ready"]


class CollectionCreate(ApiModel):
    name: Name
    description: Description = ""
    group_ids: GroupIds = Field(default_factory=list, description=COLLECTION_GROUPS_DOC)


class CollectionUpdate(ApiModel):
    name: Name | None = None
    description: Description | None = None
    group_ids: GroupIds | None = Field(default=None, description=COLLECTION_GROUPS_DOC)


class FileAdd(ApiModel):
    file_id: str = Field(min_length=1, max_length=64)


class CollectionFileRead(ApiModel):
    """``id`` is the file's own id (``fl_…``)."""

    id: str
    name: str
    status: KnowledgeFileStatus
    error: str | None
    chunks: int


class CollectionRead(ApiModel):
    id: str
    name: str
    description: str
    file_count: int
    chunk_count: int
    status: CollectionStatus = Field(description="processing while any of its files is being indexed, else ready")
    group_ids: list[int] = Field(default_factory=list, description=COLLECTION_GROUPS_DOC)
    created_at: datetime
    updated_at: datetime


class CollectionDetail(CollectionRead):
    files: list[CollectionFileRead]


class SearchHit(ApiModel):
    file_id: str
    file_name: str
    chunk_id: int
    text: str
    score: float
    page: int | None


class SearchResult(ApiModel):
    items: list[SearchHit]
    mode: Literal["lexical", "hybrid"] = Field(
        description="lexical without an embedding model; hybrid when vector similarity was fused in")

