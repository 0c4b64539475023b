"""Fixtures for the chat tests: an agent wired to the fake model, and the add-on test tool types."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chat.helpers import make_agent, register_test_tools
from tests.support import ApiClient, LiveApp


@pytest.fixture
def test_tools(app: LiveApp) -> None:
    register_test_tools(app)


@pytest.fixture
def agent(admin: ApiClient, model_id: int) -> dict[str, Any]:
    return make_agent(admin, "helper", modelId=model_id, maxSteps=5, maxOutputTokens=321)
