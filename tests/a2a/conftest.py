"""Fixtures for the A2A tests: two agents on the fake model (a caller with the agent-invoke tool and an
A2A-callable callee), told apart by their system prompts, and a personal API token for A2A clients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.fakes.openai_server import Step
from tests.support import ApiClient

CALLER_PROMPT = "You are the general assistant."
CALLEE_PROMPT = "You are the coding assistant."


def system_prompt_of(body: dict[str, Any]) -> str:
    for msg in body.get("messages", []):
        if msg.get("role") in ("system", "developer"):
            content = msg.get("content")
            return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)
    return ""


def for_agent(prompt: str) -> Callable[[dict[str, Any]], bool]:
    """A Step.match that answers only the requests of the agent with this system prompt."""
    return lambda body: prompt in system_prompt_of(body)


def caller_step(step: Step) -> Step:
    step.match = for_agent(CALLER_PROMPT)
    return step


def callee_step(step: Step, prompt: str = CALLEE_PROMPT) -> Step:
    step.match = for_agent(prompt)
    return step


@pytest.fixture
def make_agent(admin: ApiClient, model_id: int) -> Callable[..., dict[str, Any]]:
    def make(slug: str, prompt: str, **fields: Any) -> dict[str, Any]:
        body = {"slug": slug, "name": fields.pop("name", slug.title()), "systemPrompt": prompt,
                "description": fields.pop("description", f"The {slug} agent."), **fields}
        return admin.ok("POST", "/api/admin/agents", json=body)

    return make


@pytest.fixture
def invoke_tool(admin: ApiClient) -> Callable[..., dict[str, Any]]:
    """Create an agent-invoke tool with the given config and link it to an agent."""

    def make(agent: dict[str, Any], slug: str = "ask-agent", **config: Any) -> dict[str, Any]:
        tool = admin.ok("POST", "/api/agent-tools", json={"slug": slug, "name": "Ask another agent",
                                                           "type": "agent-invoke", "config": config})
        links = admin.ok("GET", f"/api/admin/agents/{agent['id']}/tools")["items"]
        body = [{"toolId": link["toolId"]} for link in links] + [{"toolId": tool["id"]}]
        admin.ok("PUT", f"/api/admin/agents/{agent['id']}/tools", json=body)
        return tool

    return make


@pytest.fixture
def pair(make_agent: Callable[..., dict[str, Any]], invoke_tool: Callable[..., dict[str, Any]]
         ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The seed's two agents: a general assistant that may call a coding assistant."""
    caller = make_agent("general", CALLER_PROMPT, name="General", a2aCallable=True)
    callee = make_agent("coder", CALLEE_PROMPT, name="Coder", a2aCallable=True)
    invoke_tool(caller)
    return caller, callee


@pytest.fixture
def token(user: ApiClient) -> str:
    return user.ok("POST", "/api/auth/tokens", json={"name": "a2a"})["token"]
