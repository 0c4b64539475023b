"""The contract between the platform and a tool type.

A tool type is code: a slug, a ``Config`` model (admin settings, with defaults; its JSON Schema drives the
admin form), an ``Input`` model (its JSON Schema is what the model sees), ``describe(config)`` and
``execute(input, config, ctx)``. A tool is a database row: an instance of a type with its config.

Cross-cutting rules (visibility by role, approval, input validation, timing, turning exceptions into
failed results) live in the wrapper in ``tools.runner``, not in each type.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from sqlalchemy.ext.asyncio import AsyncSession

from agentloft.core.runtime import Runtime


class InvalidInput(ValueError):
    """The model's arguments do not fit a tool's input schema, for types whose schema is data (an MCP
    server's tool) rather than a Pydantic model. The message is shown to the model."""


# The largest file a model is sent (Anthropic's limit for one image; OpenAI's is higher). The chat leaves
# out a larger one with a note (``chat.toolset``); an MCP call's images stop at this much in all
# (``tools.mcp.results``): each image goes with every later request of the run.
MAX_FILE_BYTES = 5 * 1024 * 1024


def base64_size(data: str) -> int:
    """The bytes base64 ``data`` stands for, without decoding it."""
    return len(data) * 3 // 4 - data[-2:].count("=")


class ToolFile(BaseModel):
    """A file a tool hands back for the model to look at, such as an MCP tool's image. The chat engine
    gives it to the model as a file part next to the result (not as base64 text inside it), and the
    chat's tool card shows images."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    media_type: str = Field(max_length=200, description="e.g. image/png")
    data: str = Field(description="The file's bytes, base64-encoded.")


class ToolResult(BaseModel):
    """What a tool returns. ``metadata`` always carries ``durationMs`` once it passed the wrapper."""

    model_config = ConfigDict(extra="forbid")

    success: bool
    data: Any = None
    error: str | None = None
    metadata: dict[str, Any] = {}
    files: list[ToolFile] = []

    @classmethod
    def ok(cls, data: Any = None, **metadata: Any) -> ToolResult:
        return cls(success=True, data=data, metadata=metadata)

    @classmethod
    def fail(cls, error: str, **metadata: Any) -> ToolResult:
        return cls(success=False, error=error, metadata=metadata)

    @classmethod
    def defer(cls, reason: str, **metadata: Any) -> ToolResult:
        """The call's result comes later, from outside the run (an agent-invoke call whose callee waits
        for an approval): the run pauses as for an approval and resumes once the result is there
        (``chat.toolset``, ``RunRegistry.on_deferred``)."""
        return cls(success=False, error=reason, metadata={**metadata, DEFERRED: True})

    @property
    def deferred(self) -> bool:
        return bool(self.metadata.get(DEFERRED))


# The metadata key of a deferred result (``ToolResult.defer``).
DEFERRED = "deferred"


Emit = Callable[[str, dict[str, Any]], Awaitable[None]]


async def _no_emit(name: str, data: dict[str, Any]) -> None:
    return None


@dataclass
class ToolContext:
    """Who runs the tool and where. ``emit(name, data)`` sends a ``data-<name>`` chunk to the caller's
    stream (the A2A tool uses it for ``data-a2a-task-started``)."""

    runtime: Runtime
    tool_id: str
    tool_slug: str
    user_id: int | None
    user_role: str | None
    session_id: str | None = None
    agent_id: int | None = None
    recursion_depth: int = 0
    approved: bool = False
    tool_call_id: str | None = None
    emit: Emit = _no_emit
    # Free-form values a caller passes down (e.g. the A2A call chain for cycle detection).
    extra: dict[str, Any] = field(default_factory=dict)
    # The user's group ids (``groups.access``): agent-invoke and knowledge decide with the caller's groups.
    group_ids: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Hidden:
    """What a caller may not use (limited to groups they are in none of), for ``ToolType.for_caller``: agents
    by slug, knowledge collections by id. Empty for an admin, and for a caller nothing is hidden from."""

    agents: frozenset[str] = frozenset()
    collections: frozenset[str] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.agents or self.collections)


ConfigT = TypeVar("ConfigT", bound=BaseModel)
InputT = TypeVar("InputT", bound=BaseModel)


class ToolType(ABC, Generic[ConfigT, InputT]):
    """Subclass, set the class attributes, implement ``describe`` and ``execute``; register an instance."""

    slug: ClassVar[str]
    name: ClassVar[str]
    description: ClassVar[str]
    Config: ClassVar[type[BaseModel]]
    Input: ClassVar[type[BaseModel]]
    # Config fields holding secrets: stored encrypted, never returned by the API.
    secret_fields: ClassVar[tuple[str, ...]] = ()
    # Whether an admin makes tools of this type from a config; False when another part of the platform
    # makes the rows (an MCP server's refresh makes the ``mcp`` ones): no default tool is made for it, the
    # API refuses to create one by hand, and the admin's "New tool" form does not offer the type.
    made_by_hand: ClassVar[bool] = True
    # Config fields (plain, not secret) that must be filled in while a tool of this type is enabled: one
    # switched on without them (web search without its SearXNG URL) fails every call the model makes.
    needed_to_enable: ClassVar[tuple[str, ...]] = ()

    def input_schema(self, config: ConfigT) -> dict[str, Any]:
        """The JSON Schema the model fills. The ``Input`` model's, unless the schema comes with the
        config (an MCP tool's is the server's)."""
        return self.Input.model_json_schema()

    def parse_input(self, raw: dict[str, Any], config: ConfigT) -> BaseModel:
        """The model's arguments as this type's input; raises ``ValidationError`` or ``InvalidInput``."""
        return self.Input.model_validate(raw)

    @abstractmethod
    def describe(self, config: ConfigT) -> str:
        """The description the model sees, built from the config."""

    @abstractmethod
    async def execute(self, input: InputT, config: ConfigT, ctx: ToolContext) -> ToolResult:
        """Do the work. May raise; the wrapper turns exceptions into failed results."""

    def for_caller(self, config: ConfigT, hidden: Hidden) -> ConfigT | None:
        """The config as a caller gets it who may not use what ``hidden`` names (agents and knowledge
        collections limited to groups they are not in), or None to leave the tool out for them: a type
        whose config names agents (agent-invoke) drops those, so that the model never reads their names;
        one whose collections are all hidden (knowledge) has nothing to search and is left out."""
        return config

    def needs_approval(self, input: InputT, config: ConfigT, ctx: ToolContext) -> bool:
        """Whether this particular call asks for the user's approval (e.g. document delete)."""
        return False

    async def unavailable(
        self, *, db: AsyncSession, configs: Mapping[str, Mapping[str, Any]]
    ) -> dict[str, str]:
        """Why some of this type's tools cannot run now although they may be enabled, by tool id; the
        others are left out. ``configs`` are the stored configs (without secrets) by tool id.

        For tools whose availability depends on something other than their own row (an MCP tool's server
        may be disabled): such a tool is left out of every run and every chat listing, exactly like a
        disabled one, and the admin's listing shows the reason. One call per type and listing, so a
        type reads what it needs in one query."""
        return {}


# A type whatever its Config and Input: what the platform's own code (the registry, loading, CRUD) holds.
AnyToolType = ToolType[Any, Any]
