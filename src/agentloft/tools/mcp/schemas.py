"""Request and response bodies of the MCP server API (camelCase on the wire).

Write-only values: the bearer ``secret`` is never returned (``secretSet`` says whether one is stored);
header and environment values are returned as ``"•••"`` under their names. On update, an absent or null
``secret`` keeps the stored one and ``""`` removes it; a header or variable whose value is ``"•••"``
keeps its stored value, one left out of the map is removed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StrictBool, StringConstraints

from agentloft.core.schemas import ApiModel

# Short enough that "<server>__<tool>" keeps room for the tool's name within the 64 characters of a slug.
ServerSlug = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=40, pattern=r"^[a-z0-9][a-z0-9-]*$")
]
ServerName = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]
HeaderName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")]
EnvName = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
Transport = Literal["http", "stdio"]


class _ServerFields(ApiModel):
    url: str | None = Field(default=None, max_length=2000, description="http only: the streamable HTTP endpoint.")
    headers: dict[HeaderName, Annotated[str, Field(max_length=8000)]] | None = Field(
        default=None, description="http only: headers sent with every request (values stored encrypted)."
    )
    command: str | None = Field(default=None, max_length=1000, description="stdio only: the program to start.")
    args: list[Annotated[str, Field(max_length=4000)]] | None = Field(default=None, max_length=100)
    env: dict[EnvName, Annotated[str, Field(max_length=8000)]] | None = Field(
        default=None, description="stdio only: environment of the process (values stored encrypted)."
    )
    secret: str | None = Field(
        default=None, max_length=8000,
        description="A bearer token (http: sent as 'Authorization: Bearer …'; stdio: in MCP_BEARER_TOKEN).",
    )
    network: StrictBool | None = Field(default=None, description="stdio only: whether the process may use the network.")
    enabled: StrictBool | None = None


class McpServerCreate(_ServerFields):
    """A new server. That an http server has a ``url`` and a stdio one a ``command`` is checked by the
    service, for creates and updates alike (422 with the field named)."""

    slug: ServerSlug
    name: ServerName
    transport: Transport


class McpServerUpdate(_ServerFields):
    """Partial update: omitted fields stay (see the module docstring for secrets)."""

    slug: ServerSlug | None = None
    name: ServerName | None = None
    transport: Transport | None = None


class McpServerRead(ApiModel):
    id: str
    slug: str
    name: str
    transport: str
    url: str | None
    headers: dict[str, str] = Field(description="Names with the value masked.")
    command: str | None
    args: list[str]
    env: dict[str, str] = Field(description="Names with the value masked.")
    secret_set: bool
    network: bool
    enabled: bool
    server_info: dict[str, Any] | None
    last_error: str | None
    refreshed_at: datetime | None
    tool_count: int
    created_at: datetime
    updated_at: datetime


class McpToolRead(ApiModel):
    """One of the server's tools as a platform tool: the ``agent_tools`` row and what the server said."""

    tool_id: str = Field(description="The agent_tools row (edit it through /api/agent-tools/{id}).")
    slug: str
    name: str = Field(description="The tool's own name, as sent on the wire.")
    title: str
    description: str = Field(description="The server's (third-party) description, shown to the model.")
    input_schema: dict[str, Any]
    annotations: dict[str, Any] = Field(description="The server's hints (readOnlyHint, destructiveHint, ...).")
    enabled: bool
    admin_only: bool
    needs_approval: bool
    missing: bool = Field(description="The server no longer lists this tool; it stays disabled, its links kept.")
    changed: bool = Field(description="What the model is shown of it (title, description, input schema, hints) "
                                      "changed since an admin enabled it.")
