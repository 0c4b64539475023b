"""Identity providers and the accounts linked to them.

A provider's settings that are not secret live in ``config`` (the API's camelCase names); its one secret
(an OIDC client secret, an LDAP service account's password) is Fernet-encrypted in ``secret_enc`` and
never leaves the server. An account is linked to a provider by the provider's own stable id for the
person (``subject``: the OIDC ``sub``, the LDAP entry's DN), never by a name the person could change.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from sqlalchemy import JSON, Boolean, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base, TimestampMixin, UTCDateTime, utcnow

ProviderKind = Literal["oidc", "ldap"]


class AuthProvider(TimestampMixin, Base):
    __tablename__ = "auth_providers"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    slug: Mapped[str] = mapped_column(String(64), unique=True, nullable=False)
    name: Mapped[str] = mapped_column(String(100), nullable=False)
    kind: Mapped[ProviderKind] = mapped_column(String(16), nullable=False)
    config: Mapped[dict[str, Any]] = mapped_column(JSON, nullable=False, default=dict)
    secret_enc: Mapped[str | None] = mapped_column(Text, nullable=True)
    enabled: Mapped[bool] = mapped_column(Boolean, nullable=False, default=True)


class UserIdentity(Base):
    __tablename__ = "user_identities"
    __table_args__ = (UniqueConstraint("provider_id", "subject"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    provider_id: Mapped[int] = mapped_column(ForeignKey("auth_providers.id", ondelete="CASCADE"), index=True)
    subject: Mapped[str] = mapped_column(String(512), nullable=False)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime(), default=utcnow, nullable=False)
