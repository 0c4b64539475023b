"""Request and response bodies of the auth and user-admin APIs."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, StrictBool, StringConstraints, field_validator

from agentloft.auth.models import Role
from agentloft.core.schemas import ApiModel
from agentloft.groups.schemas import GroupRef

Username = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=3, max_length=32, pattern=r"^[A-Za-z0-9_.-]+$")
]
Password = Annotated[str, StringConstraints(min_length=8, max_length=256)]


class Credentials(ApiModel):
    username: Username
    password: Password


class LoginInput(ApiModel):
    username: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=64)]
    password: Annotated[str, StringConstraints(min_length=1, max_length=256)]


class Me(ApiModel):
    id: int
    username: str
    role: Role
    auth_provider: str = Field(description='"local", or the slug of the identity provider of the account.')


class UserCreate(ApiModel):
    username: Username
    password: Password
    role: Role = "user"


Email = Annotated[str, StringConstraints(strip_whitespace=True, max_length=320, pattern=r"^[^@\s]+@[^@\s]+$")]


class UserUpdate(ApiModel):
    role: Role | None = None
    email: Email | None = Field(
        default=None, description="The account's email; an identity provider may link by it (``linkByEmail``)."
    )
    disabled: StrictBool | None = None
    password: Password | None = Field(
        default=None, description="A new password for the account; its browsers are signed out."
    )


class PasswordChange(ApiModel):
    current_password: Annotated[str, StringConstraints(min_length=1, max_length=256)]
    new_password: Password


class UserRead(ApiModel):
    id: int
    username: str
    role: Role
    disabled: bool
    created_at: datetime
    auth_provider: str = Field(description='"local", or the slug of the identity provider of the account.')
    email: str | None = None
    groups: list[GroupRef] = Field(default_factory=list, description="Filled in the admins' list of users.")

    @field_validator("auth_provider", mode="before")
    @classmethod
    def _local(cls, value: str | None) -> str:
        return value or "local"


class TokenCreate(ApiModel):
    name: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=100)]


class TokenCreated(ApiModel):
    id: int
    name: str
    token: str = Field(description="The secret; shown only in this response.")


class TokenRead(ApiModel):
    id: int
    name: str
    created_at: datetime
    last_used_at: datetime | None
