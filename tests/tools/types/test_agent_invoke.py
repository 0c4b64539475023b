from __future__ import annotations

from agentloft.a2a.tool import TOOL_TYPE as INVOKE
from tests.tools.types.conftest import Run


def test_config_defaults_follow_the_seed() -> None:
    dumped = INVOKE.Config().model_dump(by_alias=True)
    assert dumped == {"maxRecursionDepth": 3, "timeoutMs": 120000, "maxOutputTokens": 2000, "allowedAgents": []}
    schema = INVOKE.Input.model_json_schema()
    assert set(schema["properties"]) == {"agentSlug", "input"} and set(schema["required"]) == {"agentSlug", "input"}


def test_description_names_the_allowed_agents() -> None:
    assert "any agent that accepts A2A calls" in INVOKE.describe(INVOKE.Config())
    assert "writer, critic" in INVOKE.describe(INVOKE.Config(allowed_agents=["writer", "critic"]))


async def test_bad_input_never_reaches_the_a2a_call(run: Run) -> None:
    bad = await run(INVOKE, {"agentSlug": "", "input": "x"})
    assert not bad.success and "agentSlug: String should have at least 1 character" in bad.error
    missing = await run(INVOKE, {"agentSlug": "writer"})
    assert not missing.success and "input: Field required" in missing.error
    # the chat's limit: a model cannot hand another agent more than a user may send one
    long = await run(INVOKE, {"agentSlug": "writer", "input": "x" * 100_001})
    assert not long.success and "input: String should have at most 100000 characters" in long.error
