"""``mcp_servers``: the MCP servers an admin registered as tool sources.

A server is reached over streamable HTTP (``url``, ``headers``) or started as a local process over stdio
(``command``, ``args``, ``env``). What can carry credentials is stored encrypted, each as one Fernet token
of its JSON: the bearer ``secret``, the header values and the environment values. Only the names of
headers and variables are ever shown again. The server's tools are not stored here: each is an
``agent_tools`` row of type ``mcp`` whose config names this server.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime
from agentloft.core.ids import new_id

TRANSPORTS = ("http", "stdio")


def _server_id() -> str:
    return new_id("ms")


class McpServer(TimestampMixin, Base):
    __tablename__ = "mcp_servers"

    id: Mapped[str] = mapped_column(String(40), primary_key=True, default=_server_id)
    slug: Mapped[str] = mapped_column(String(40), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    transport: Mapped[str] = mapped_column(String(10), nullable=False)
    url: Mapped[str | None] = mapped_column(Text, nullable=True)
    command: Mapped[str | None] = mapped_column(Text, nullable=True)
    args: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    # Fernet tokens of JSON: {"name": "value"} for headers and env, a string for the secret.
    headers_enc: Mapped[str | None] = mapped_column(Text, nullable=True)
    env_enc: Mapped[str | None] = mapped_column(Text, nullable=True)
    secret_enc: Mapped[str | None] = mapped_column(Text, nullable=True)
    # Names only, so a listing never decrypts anything.
    header_names: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    env_names: Mapped[list[str]] = mapped_column(JSON, nullable=False, default=list)
    network: Mapped[bool] = mapped_column(Boolean, nullable=False, default=False)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)
    # What the last refresh learned: the server's name, version and instructions; or why it failed.
    server_info: Mapped[dict[str, Any] | None] = mapped_column(JSON, nullable=True)
    last_error: Mapped[str | None] = mapped_column(Text, nullable=True)
    refreshed_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
