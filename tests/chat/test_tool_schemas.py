"""A tool's input schema is built when its row (or type) changes, not on every turn: building it walks the
whole ``Input`` model, a few milliseconds per tool on every chat. Edits must still reach the next chat."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agentloft.tools.base import ToolContext, ToolResult, ToolType
from tests.chat.helpers import attach, chat, make_tool
from tests.fakes.openai_server import FakeModel
from tests.support import ApiClient, LiveApp

BUILDS: list[str] = []  # the live server runs in this process


class _Config(BaseModel):
    label: str = "first"


class CountedInput(BaseModel):
    text: str

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        BUILDS.append(cls.__name__)
        return super().model_json_schema(*args, **kwargs)


class CountedTool(ToolType[_Config, CountedInput]):
    slug = "test-counted"
    name = "Counted"
    description = "Counts how often its input schema is built."
    Config = _Config
    Input = CountedInput

    def describe(self, config: _Config) -> str:
        return f"Counted tool ({config.label})."

    async def execute(self, input: CountedInput, config: _Config, ctx: ToolContext) -> ToolResult:
        return ToolResult.ok({"text": input.text})


@pytest.fixture
def counted(app: LiveApp) -> None:
    app.server.server.config.app.state.runtime.registry.register(CountedTool())
    BUILDS.clear()


def _sent_tool(fake_model: FakeModel) -> dict[str, Any]:
    return fake_model.requests[-1]["tools"][0]["function"]


def test_schema_is_built_once_per_row_version(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel, counted: None
) -> None:
    tool = make_tool(admin, "counted", "test-counted")
    other = make_tool(admin, "other", "test-counted", enabled=False)
    attach(admin, agent["id"], {"toolId": tool["id"]})
    for i in range(3):
        chat(user, "helper", f"turn {i}")
        # a write to the tools table between turns empties the read cache of chat inputs: the schema
        # must survive that (and PostgreSQL, where there is no read cache, reads the rows every turn)
        admin.ok("PUT", f"/api/agent-tools/{other['id']}", json={"name": f"other {i}"})
    assert _sent_tool(fake_model)["parameters"]["required"] == ["text"]
    assert BUILDS == ["CountedInput"]

    admin.ok("PUT", f"/api/agent-tools/{tool['id']}", json={"config": {"label": "second"}})
    chat(user, "helper", "after the edit")
    chat(user, "helper", "and again")
    assert "(second)" in _sent_tool(fake_model)["description"]
    assert BUILDS == ["CountedInput"] * 2
