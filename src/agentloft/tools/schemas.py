"""Request and response bodies of the tool API (camelCase on the wire).

Secrets: a type's secret config fields are never returned. ``AgentToolRead.config`` leaves them out and
``secretsSet`` names the ones that hold a stored value. On create/update a secret field that is absent,
``null`` or the placeholder ``SECRET_PLACEHOLDER`` keeps the stored value; an empty value (``""``, ``{}``,
``[]``) removes it; any other value replaces it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from pydantic import Field, StrictBool, StrictInt, StringConstraints

from agentloft.core.schemas import DB_INT_MAX, ApiModel
from agentloft.groups.schemas import GROUP_IDS_DOC, GroupIds

APPROVERS_DOC = ("The groups whose members answer this tool's calls that wait for approval, instead of the person "
                 "chatting (who may then not answer them); empty: the person chatting approves.")

SECRET_PLACEHOLDER = "•••"

# The slug is the function name the model sees: OpenAI and Anthropic accept [a-zA-Z0-9_-]{1,64}.
ToolSlug = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9_-]*$")
]
ToolName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
TypeSlug = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]


class ToolTypeRead(ApiModel):
    """A registered tool type, enough to build the admin's create/edit form."""

    slug: str
    name: str
    description: str
    config_schema: dict[str, Any]
    input_schema: dict[str, Any]
    defaults: dict[str, Any]
    secret_fields: list[str] = Field(description="Config fields (JSON names) stored encrypted, never returned.")
    default_needs_approval: bool
    default_admin_only: bool
    creatable: bool = Field(
        description="Whether an admin creates tools of this type by hand (POST /api/agent-tools); false for "
        "types whose tools come from elsewhere, such as 'mcp' (an MCP server's refresh)."
    )


class AgentToolCreate(ApiModel):
    slug: ToolSlug = Field(description="Unique; the function name the model sees.")
    name: ToolName
    description: str = Field(default="", max_length=2000)
    type: TypeSlug
    config: dict[str, Any] = Field(default_factory=dict, description="Validated by the type's Config.")
    enabled: StrictBool = True
    needs_approval: StrictBool | None = Field(default=None, description="Omitted: the type's default.")
    admin_only: StrictBool | None = Field(default=None, description="Omitted: the type's default.")
    group_ids: GroupIds = Field(default_factory=list, description=GROUP_IDS_DOC)
    approver_group_ids: GroupIds = Field(default_factory=list, description=APPROVERS_DOC)
    audit_arguments: StrictBool = Field(default=False, description="Keep each call's arguments in the audit "
                                        "trail (off: only the names of the arguments given).")


class AgentToolUpdate(ApiModel):
    """Partial update: omitted fields stay. A given ``config`` replaces the stored one (secrets excepted,
    see the module docstring); changing ``type`` re-validates the config against the new type."""

    slug: ToolSlug | None = None
    name: ToolName | None = None
    description: str | None = Field(default=None, max_length=2000)
    type: TypeSlug | None = None
    config: dict[str, Any] | None = None
    enabled: StrictBool | None = None
    needs_approval: StrictBool | None = None
    admin_only: StrictBool | None = None
    group_ids: GroupIds | None = Field(default=None, description=GROUP_IDS_DOC)
    approver_group_ids: GroupIds | None = Field(default=None, description=APPROVERS_DOC)
    audit_arguments: StrictBool | None = None


class AgentToolRead(ApiModel):
    id: str
    slug: str
    name: str
    description: str
    type: str
    config: dict[str, Any] = Field(description="Without secret fields; see secretsSet.")
    secrets_set: list[str]
    enabled: bool
    needs_approval: bool
    admin_only: bool
    group_ids: list[int] = Field(default_factory=list, description=GROUP_IDS_DOC)
    approver_group_ids: list[int] = Field(default_factory=list, description=APPROVERS_DOC)
    audit_arguments: bool
    unavailable: str | None = Field(
        default=None,
        description="Why the tool cannot run now although it may be enabled (its MCP server is disabled): "
        "no model gets it and no chat listing shows it until that changes. null when it can run.",
    )
    created_at: datetime
    updated_at: datetime


class ExecuteRequest(ApiModel):
    input: dict[str, Any] = Field(default_factory=dict, description="Arguments, as the model would send.")
    approved: StrictBool = Field(
        default=False,
        description="The admin confirmed this call. Without it, a call that needs approval answers "
        "needsApproval and does nothing.",
    )


class ToolInfo(ApiModel):
    """Seed 001's tool info: what a role may use, without config."""

    id: str
    slug: str
    name: str
    description: str
    type: str
    needs_approval: bool
    admin_only: bool


class LlmToolRead(ApiModel):
    """One tool exactly as the model sees it (``name``, ``description``, ``inputSchema``), plus what a chat
    page shows next to it: the tool id, its human title and whether its calls wait for approval."""

    name: str
    description: str
    input_schema: dict[str, Any]
    id: str
    title: str
    needs_approval: bool


class AgentToolLinkIn(ApiModel):
    tool_id: str
    needs_approval: StrictBool | None = Field(default=None, description="null inherits the tool's setting.")
    position: StrictInt | None = Field(default=None, ge=0, le=DB_INT_MAX, description="Omitted: the index in the list.")


class AgentToolLinkRead(ApiModel):
    tool_id: str
    needs_approval: bool | None
    position: int
    effective_needs_approval: bool
    slug: str
    name: str
    type: str
    enabled: bool
    admin_only: bool
