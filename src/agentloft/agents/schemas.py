"""Request and response bodies of the agent API (camelCase on the wire).

Admins read and write the whole agent (``AgentRead``: prompt, model, tools, groups); everyone else sees
``AgentPublic``, which names no prompt and no model wiring. A save answers ``AgentSaved``, with warnings
such as a system prompt that names an admin-only tool.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StrictInt, StringConstraints, ValidationError, model_validator
from pydantic_core import InitErrorDetails

from agentloft.core.errors import pydantic_problem
from agentloft.core.schemas import ApiModel, BodyId
from agentloft.groups.schemas import GROUP_IDS_DOC, GroupIds

Slug = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9-]*$")
]
Name = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
Kind = Literal["local", "remote"]
StarterPrompt = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=200)]
# A few short prompts a new chat offers as buttons; more than a handful would crowd the empty chat.
StarterPrompts = Annotated[list[StarterPrompt], Field(max_length=6)]
CardUrl = Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000, pattern=r"^https?://\S+$")]


class AgentCreate(ApiModel):
    slug: Slug = Field(description="Unique, URL-safe: lowercase letters, digits and dashes.")
    name: Name
    description: str = Field(default="", max_length=2000)
    starter_prompts: StarterPrompts = Field(default_factory=list, description="Shown as buttons in a new chat.")
    system_prompt: str = Field(default="", max_length=100_000)
    model_id: BodyId | None = Field(default=None, description="A model configuration; null uses the default.")
    max_steps: StrictInt = Field(default=10, ge=1, le=100)
    max_output_tokens: StrictInt = Field(default=4096, ge=1, le=1_000_000)
    enabled: StrictBool = True
    a2a_callable: StrictBool = Field(default=False, alias="a2aCallable")
    kind: Kind = Field(default="local", description="'remote': an agent elsewhere, called over A2A.")
    card_url: CardUrl | None = Field(default=None, description="remote only: the URL of its agent card.")
    remote_token: str | None = Field(
        default=None, max_length=8000, description="remote only: bearer token sent to it (write-only)."
    )
    group_ids: GroupIds = Field(default_factory=list, description=GROUP_IDS_DOC)

    @model_validator(mode="after")
    def _remote_needs_card(self) -> AgentCreate:
        if self.kind == "remote" and not self.card_url:
            # Named as the field's own problem (not the body's), as the service names it on an update.
            missing = pydantic_problem("required_for_remote_agent", "required for a remote agent")
            raise ValidationError.from_exception_data(
                type(self).__name__, [InitErrorDetails(type=missing, loc=("cardUrl",), input=None)]
            )
        return self


class AgentUpdate(ApiModel):
    slug: Slug | None = None
    name: Name | None = None
    description: str | None = Field(default=None, max_length=2000)
    starter_prompts: StarterPrompts | None = None
    system_prompt: str | None = Field(default=None, max_length=100_000)
    model_id: BodyId | None = None
    max_steps: StrictInt | None = Field(default=None, ge=1, le=100)
    max_output_tokens: StrictInt | None = Field(default=None, ge=1, le=1_000_000)
    enabled: StrictBool | None = None
    a2a_callable: StrictBool | None = Field(default=None, alias="a2aCallable")
    kind: Kind | None = None
    card_url: CardUrl | None = None
    remote_token: str | None = Field(
        default=None, max_length=8000, description="Omitted or null keeps the stored token; \"\" removes it."
    )
    group_ids: GroupIds | None = Field(default=None, description=GROUP_IDS_DOC)


class AgentRead(ApiModel):
    id: int
    slug: str
    name: str
    description: str
    starter_prompts: list[str]
    system_prompt: str
    model_id: int | None
    max_steps: int
    max_output_tokens: int
    enabled: bool
    a2a_callable: bool = Field(alias="a2aCallable")
    kind: str
    card_url: str | None
    remote_token_set: bool
    card: dict[str, Any] | None = Field(description="remote only: the agent card as last fetched.")
    card_fetched_at: datetime | None
    card_error: str | None = Field(description="remote only: why the card could not be fetched last time.")
    group_ids: list[int] = Field(default_factory=list, description=GROUP_IDS_DOC)
    created_at: datetime
    updated_at: datetime


class AgentSaved(AgentRead):
    """An agent as stored by a create or update, with what the admin should know about it."""

    warnings: list[str] = Field(
        default_factory=list, description="E.g. the system prompt names an admin-only tool."
    )


class PromptCheck(ApiModel):
    system_prompt: str = Field(max_length=100_000)


class PromptWarnings(ApiModel):
    warnings: list[str]


class AgentPublic(ApiModel):
    """What any signed-in user sees of an agent: no prompt, no model wiring."""

    id: int
    slug: str
    name: str
    description: str
    starter_prompts: list[str]
    a2a_callable: bool = Field(alias="a2aCallable")
