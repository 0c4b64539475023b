"""The groups domain's refusals, answered in the one error shape by the shared handler."""

from __future__ import annotations

from agentloft.core.errors import Conflict, NotFound, problem


class GroupNotFound(NotFound):
    code = "group_not_found"

    def __init__(self) -> None:
        super().__init__("group not found")


class GroupNameTaken(Conflict):
    code = "group_name_taken"

    def __init__(self, name: str) -> None:
        super().__init__(f"a local group named '{name}' exists", fields={"name": problem("slug_taken", "taken")})


class GroupSynced(Conflict):
    """A provider's group follows the provider: what an admin changed would be undone at the next sign-in."""

    code = "group_synced"

    def __init__(self, source: str) -> None:
        super().__init__(f"this group is synced from the sign-in provider '{source}' and cannot be changed here")


class GroupInUse(Conflict):
    code = "group_in_use"

    def __init__(self, uses: int) -> None:
        super().__init__(f"{uses} agents, models, tools or collections are limited to this group, or tools "
                         "name it as their approvers: remove it from them first")
