"""The tool-type registry: duplicate slugs stop start-up, and every registered type is documented."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agentloft.app import build_runtime
from agentloft.core.settings import load_settings
from agentloft.tools import lifecycle
from agentloft.tools.registry import DuplicateToolType, IncompleteToolType, ToolRegistry
from agentloft.tools.types import builtin_types
from tests.support import ApiClient
from tests.tools import addon


class _SameSlug(addon.EchoTool):
    name = "Impostor"


def test_duplicate_slug_raises_and_keeps_the_first() -> None:
    registry = ToolRegistry()
    registry.register(addon.TOOL_TYPE)
    with pytest.raises(DuplicateToolType, match="test-echo"):
        registry.register(_SameSlug())
    assert registry.get("test-echo") is addon.TOOL_TYPE and len(registry) == 1


def test_a_builtin_slug_cannot_be_taken_by_an_addon() -> None:
    registry = ToolRegistry()
    registry.register_all(builtin_types())
    calculator = registry.get("calculator")
    assert calculator is not None

    class Impostor(type(calculator)):  # type: ignore[misc]
        pass

    with pytest.raises(DuplicateToolType):
        registry.register(Impostor())
    assert registry.get("calculator") is calculator


def test_start_up_registers_every_builtin_once(tmp_path: Path) -> None:
    settings = load_settings(data_dir=tmp_path, env="test", secret_key="k")
    rt = build_runtime(settings)
    asyncio.run(lifecycle.startup(rt))
    builtins = [t.slug for t in builtin_types()]
    assert builtins and sorted(builtins) == [t.slug for t in rt.registry.all()]
    # an add-on registers afterwards through the same call, and cannot reuse a slug
    rt.registry.register(addon.TOOL_TYPE)
    with pytest.raises(DuplicateToolType):
        rt.registry.register(_SameSlug())


def test_incomplete_type_is_refused() -> None:
    class Nameless(addon.EchoTool):
        slug = "nameless"
        name = ""

    with pytest.raises(IncompleteToolType, match="name"):
        ToolRegistry().register(Nameless())


def test_unknown_slug_is_none() -> None:
    assert ToolRegistry().get("nope") is None


def test_every_registered_type_is_listed_and_documented(admin: ApiClient, echo_type: str) -> None:
    """Like datasette's documentation test: a type without a name and a description would leave the
    admin (and the model) guessing what it does, so it fails here."""
    body = admin.ok("GET", "/api/agent-tools/types?pageSize=100")
    items: list[dict[str, Any]] = body["items"]
    slugs = [t["slug"] for t in items]
    assert body["total"] == len(items) and slugs == sorted(slugs)
    # a2a and mcp register one each
    assert set(slugs) == {t.slug for t in builtin_types()} | {"agent-invoke", "mcp", echo_type}
    for t in items:
        assert t["name"].strip() and t["description"].strip(), t["slug"]
        assert t["configSchema"]["type"] == "object" and t["inputSchema"]["type"] == "object", t["slug"]
        assert isinstance(t["defaults"], dict)
        assert isinstance(t["defaultNeedsApproval"], bool) and isinstance(t["defaultAdminOnly"], bool)


def test_types_listing_shape(admin: ApiClient, echo_type: str) -> None:
    items = admin.ok("GET", "/api/agent-tools/types?pageSize=100")["items"]
    echo = next(t for t in items if t["slug"] == echo_type)
    assert echo["name"] == "Test echo"
    assert set(echo["configSchema"]["properties"]) == {"endpoint", "apiKey", "timeoutMs"}
    assert echo["inputSchema"]["required"] == ["text"]
    assert echo["defaults"] == {"endpoint": "https://example.org/api", "apiKey": "", "timeoutMs": 1000}
    calculator = next(t for t in items if t["slug"] == "calculator")
    assert "expression" in calculator["inputSchema"]["properties"]
