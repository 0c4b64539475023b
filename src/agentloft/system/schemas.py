"""Request and response bodies of Admin → Settings: the instance-wide settings an admin may change while
the server runs (the rest are environment settings, see the README).
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, StrictBool, StringConstraints

from agentloft.core.schemas import ApiModel, BodyId

HostOrCidr = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=255)]


class InstanceSettings(ApiModel):
    signup_open: bool
    generate_titles: bool = Field(
        description="Name new chats with one short call to their model after the first reply."
    )
    allowed_internal_hosts: list[HostOrCidr] = Field(
        description="Hosts or CIDRs that tools may reach although they are private or loopback."
    )
    embedding_model_id: int | None = Field(
        default=None, description="The embedding model knowledge search uses; null: lexical search only."
    )


class InstanceSettingsUpdate(ApiModel):
    signup_open: StrictBool | None = None
    generate_titles: StrictBool | None = None
    allowed_internal_hosts: list[HostOrCidr] | None = None
    embedding_model_id: BodyId | None = Field(
        default=None, description="An embedding model's id; null clears it (retrieval becomes lexical only).")
