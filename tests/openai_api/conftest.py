"""Fixtures for the OpenAI-compatible API: an agent on the fake model, and the user's API token."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chat.helpers import make_agent, register_test_tools
from tests.support import ApiClient, LiveApp


@pytest.fixture
def agent(admin: ApiClient, model_id: int) -> dict[str, Any]:
    return make_agent(admin, "helper", modelId=model_id, maxSteps=5, description="Helps.")


@pytest.fixture
def token(user: ApiClient) -> str:
    """A personal API token of ``user`` (alice), made as the Tokens page makes one."""
    return user.ok("POST", "/api/auth/tokens", json={"name": "openai"})["token"]


@pytest.fixture
def base_url(app: LiveApp) -> str:
    return f"{app.url}/v1"


@pytest.fixture
def test_tools(app: LiveApp) -> None:
    register_test_tools(app)
