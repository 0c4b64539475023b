"""The document tool's config (seed 000, chapter 2) and its input schema with the per-action rules."""

from __future__ import annotations

from typing import Any, Literal, LiteralString

from pydantic import Field, ValidationError, model_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from agentloft.core.db import storable
from agentloft.core.schemas import ApiModel
from agentloft.documents.service import HARD_MAX_CONTENT_LENGTH

Action = Literal["create", "read", "update", "delete", "list"]
DocType = Literal["memory", "document"]
ACTIONS: tuple[str, ...] = ("create", "read", "update", "delete", "list")
UPDATABLE = ("title", "content", "type", "summary", "tags")


class Config(ApiModel):
    max_content_length: int = Field(
        default=50_000, ge=1, le=HARD_MAX_CONTENT_LENGTH, description="Most characters a document may hold."
    )
    default_summary_length: int = Field(
        default=200, ge=20, le=2_000, description="Characters cut from the content when no summary is given."
    )
    token_budget: int = Field(
        default=2_000, ge=100, le=100_000, description="Most tokens one read or list result may spend."
    )
    max_page_size: int = Field(default=20, ge=1, le=50, description="Most documents one list call returns.")
    approval_required_actions: list[Action] = Field(
        default_factory=lambda: ["delete"], description="Actions that wait for the user's approval."
    )


def _missing(field: str, action: str, message: LiteralString | None = None) -> InitErrorDetails:
    text = message or 'required for action "{action}"'
    return InitErrorDetails(
        type=PydanticCustomError("action_rule", text, {"action": action}), loc=(field,), input=None
    )


class Input(ApiModel):
    """What the model sends. There is no ``sessionId``: the tool records the run's session itself, and
    a ``sessionId`` the model makes up is dropped before validation."""

    action: Action = Field(description="create | read | update | delete | list")
    title: str | None = Field(default=None, max_length=255, description="create/update: the title.")
    content: str | None = Field(default=None, description="create/update: the full text, markdown.")
    type: DocType | None = Field(
        default=None, description="create/update: 'memory' (your own notes, default) or 'document' (for the user)."
    )
    summary: str | None = Field(
        default=None, description="create/update: a short summary; if left out, the start of the content."
    )
    tags: str | None = Field(default=None, max_length=500, description="create/update: comma-separated tags.")
    id: str | None = Field(default=None, description="read/update/delete: the document id (ad_...).")
    q: str | None = Field(
        default=None, max_length=200, description="read/list: search words (Chinese or English), all must match."
    )
    filter_type: DocType | None = Field(default=None, description="read/list: only this type.")
    page: int | None = Field(default=None, ge=1, description="list: page number, from 1.")
    page_size: int | None = Field(default=None, ge=1, le=50, description="list: documents per page.")
    offset: int | None = Field(
        default=None, ge=0, description="list: skip this many (instead of page), to continue after a cut."
    )
    full_content: bool | None = Field(
        default=None, description="read: true returns the whole content even when it is long."
    )

    @model_validator(mode="before")
    @classmethod
    def _drop_session_id(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in ("sessionId", "session_id")}
        return data

    @model_validator(mode="before")
    @classmethod
    def _storable(cls, data: Any) -> Any:
        """U+0000 in what the model writes (a binary page's text, a program's output) becomes U+FFFD, as in
        the chat's own text (``core.db.storable``): no database refuses it and the document is kept. The
        API refuses it instead: there a person can fix what they send."""
        return storable(data)

    @model_validator(mode="after")
    def _action_rules(self) -> Input:
        errors = self._rule_errors()
        if errors:
            raise ValidationError.from_exception_data(type(self).__name__, errors)
        return self

    def _rule_errors(self) -> list[InitErrorDetails]:
        a = self.action
        if a == "create":
            return [_missing(f, a) for f in ("title", "content") if not (getattr(self, f) or "").strip()]
        if a == "read" and not self.id and not (self.q or "").strip():
            return [_missing("id", a, 'action "{action}" needs an id or a search q')]
        if a in ("update", "delete") and not self.id:
            return [_missing("id", a)]
        if a == "update" and all(getattr(self, f) is None for f in UPDATABLE):
            return [_missing("title", a, 'action "{action}" needs at least one of title, content, type, summary, tags')]
        return []
